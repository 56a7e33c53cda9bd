import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.StringJoiner;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * bench_faults.py's child for Java's KafkaConsumer: one member of a classic group that commits (commitSync) once
 * it has read 1,000 records since its last commit, and writes what happened to the log file bench_faults.py reads.
 *
 * <p>Run by bench_faults.py (compiled once into the tests' cache by javapeer.build, never committed):
 * {@code java -Xmx512m -cp CLASSES:JARS JavaFaultConsume --bootstrap H:P --topic T --group G --out FILE
 * --commit-every 1000 --session-timeout-ms 6000 --heartbeat-interval-ms 500 --request-timeout-ms 4000
 * --connection-setup-timeout-ms 3000 --max-poll-records 10000}. It stops when its standard input ends (the
 * parent closes it).
 *
 * <p>The log's lines, tab-separated, each stamped with the wall clock in seconds (the parent's clock too):
 * {@code R t partition offset value} per record, {@code C t p:o,p:o} per commit that succeeded (the offsets read
 * since the last one), {@code E t where kind message} per exception raised to this loop, {@code B t kind p,p} per
 * rebalance callback (revoked, lost, assigned), {@code S t} once polling starts, {@code X t} at the end.
 */
public final class JavaFaultConsume {
    private JavaFaultConsume() {
    }

    private static volatile boolean stopping;

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        int commitEvery = Integer.parseInt(args.getOrDefault("commit-every", "1000"));
        Properties config = new Properties();
        config.put("bootstrap.servers", args.get("bootstrap"));
        config.put("group.id", args.get("group"));
        config.put("group.protocol", "classic");
        config.put("client.id", "bench-faults-java");
        config.put("enable.auto.commit", "false");
        config.put("auto.offset.reset", "earliest");
        config.put("session.timeout.ms", args.getOrDefault("session-timeout-ms", "6000"));
        config.put("heartbeat.interval.ms", args.getOrDefault("heartbeat-interval-ms", "500"));
        config.put("request.timeout.ms", args.getOrDefault("request-timeout-ms", "4000"));
        config.put("socket.connection.setup.timeout.ms", args.getOrDefault("connection-setup-timeout-ms", "3000"));
        config.put("max.poll.records", args.getOrDefault("max-poll-records", "10000"));
        config.put("key.deserializer", ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", ByteArrayDeserializer.class.getName());

        try (BufferedWriter out = Files.newBufferedWriter(Path.of(args.get("out")), StandardCharsets.UTF_8);
                KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            Log log = new Log(out);
            Map<Integer, Long> pending = new HashMap<>();
            watchStdin(consumer);
            consumer.subscribe(List.of(args.get("topic")), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    released(log, pending, "revoked", partitions);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    released(log, pending, "lost", partitions);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    log.line("B", "assigned", partitionList(partitions));
                }
            });
            log.line("S");
            log.flush();
            int sinceCommit = 0;
            while (!stopping) {
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                } catch (KafkaException e) {
                    log.error("poll", e);
                    log.flush();
                    continue;
                }
                String at = now();
                for (ConsumerRecord<byte[], byte[]> record : batch) {
                    log.raw("R\t" + at + "\t" + record.partition() + "\t" + record.offset() + "\t"
                            + new String(record.value(), StandardCharsets.US_ASCII));
                    pending.put(record.partition(), record.offset() + 1);
                    sinceCommit++;
                }
                if (sinceCommit >= commitEvery && !pending.isEmpty()) {
                    sinceCommit = 0;
                    Map<Integer, Long> offsets = new HashMap<>(pending);
                    try {
                        consumer.commitSync();
                        StringJoiner shown = new StringJoiner(",");
                        offsets.forEach((p, o) -> shown.add(p + ":" + o));
                        log.line("C", shown.toString());
                        offsets.forEach((p, o) -> pending.remove(p, o));
                    } catch (WakeupException e) {
                        break;
                    } catch (KafkaException e) {
                        log.error("commit", e);
                    }
                }
                log.flush();
            }
            log.line("X");
            log.flush();
        }
    }

    private static void released(Log log, Map<Integer, Long> pending, String kind,
            Collection<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            pending.remove(tp.partition());
        }
        log.line("B", kind, partitionList(partitions));
    }

    /** Standard input's end (the parent closed it, or died) stops the loop: the consumer's poll is woken. */
    private static void watchStdin(KafkaConsumer<byte[], byte[]> consumer) {
        Thread watcher = new Thread(() -> {
            InputStream in = System.in;
            try {
                while (in.read() >= 0) {
                    // nothing is sent: only the end matters
                }
            } catch (IOException e) {
                // the same as its end
            }
            stopping = true;
            consumer.wakeup();
        }, "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** The wall clock in seconds with microseconds, as Python's time.time() prints it. */
    private static String now() {
        Instant instant = Instant.now();
        return instant.getEpochSecond() + "." + String.format("%06d", instant.getNano() / 1000);
    }

    private static String partitionList(Collection<TopicPartition> partitions) {
        StringJoiner shown = new StringJoiner(",");
        partitions.stream().map(TopicPartition::partition).sorted().forEach(p -> shown.add(Integer.toString(p)));
        return shown.toString();
    }

    /** The log file's lines (written by the polling thread only: the rebalance callbacks run inside poll). */
    private static final class Log {
        private final BufferedWriter out;

        Log(BufferedWriter out) {
            this.out = out;
        }

        void line(String kind, String... fields) {
            StringBuilder text = new StringBuilder(kind).append('\t').append(now());
            for (String field : fields) {
                text.append('\t').append(field.replace('\t', ' ').replace('\n', ' '));
            }
            raw(text.toString());
        }

        void error(String where, Exception e) {
            line("E", where, e.getClass().getSimpleName(), String.valueOf(e.getMessage()));
        }

        void raw(String text) {
            try {
                out.write(text);
                out.write('\n');
            } catch (IOException e) {
                throw new IllegalStateException("cannot write the log", e);
            }
        }

        void flush() {
            try {
                out.flush();
            } catch (IOException e) {
                throw new IllegalStateException("cannot write the log", e);
            }
        }
    }

    private static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --key value pairs, got " + String.join(" ", argv));
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String key : new String[] {"bootstrap", "topic", "group", "out"}) {
            if (!args.containsKey(key)) {
                throw new IllegalArgumentException("missing --" + key);
            }
        }
        return args;
    }
}
