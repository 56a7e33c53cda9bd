import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * bench_consume.py's child for Java's KafkaConsumer: the same loop as the Python children, one JSON result line.
 *
 * <p>Run by benchmarks/javapeer.py (compiled once into a cache, never committed):
 * {@code java -Xmx512m -cp CLASSES:JARS JavaConsume --client java --group-protocol classic --bootstrap H:P
 * --topic T --partitions N --expect RECORDS --clk-tck 100 --max-poll-records 10000 --stall-s 30}.
 * {@code --passes K} (default 1) reads the topic K times in one JVM and reports the last pass: a warm JIT
 * (bench_consume.py's {@code java-warm} and {@code java-async-warm} clients).
 *
 * <p>It assigns every partition, seeks to the beginning, and polls (1 s timeout) until it has the expected count,
 * summing every value's length and checking that each partition's offsets continue without gap or repeat. Wall
 * time runs from just before the first poll to the last record, as the Python children's; CPU over the same
 * interval is the whole process's (every thread: the consumer's network thread, the JIT, the GC), from
 * /proc/self/stat; peak RSS is VmHWM at the end. The line starts with bench_consume.py's result marker.
 */
public final class JavaConsume {
    private static final String RESULT_MARKER = "BENCH_RESULT ";

    private JavaConsume() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        String client = args.get("client");
        String topic = args.get("topic");
        int partitions = Integer.parseInt(args.get("partitions"));
        long expect = Long.parseLong(args.get("expect"));
        long clkTck = Long.parseLong(args.getOrDefault("clk-tck", "100"));
        long stallNanos = Long.parseLong(args.getOrDefault("stall-s", "30")) * 1_000_000_000L;
        int passes = Integer.parseInt(args.getOrDefault("passes", "1"));
        if (passes < 1) {
            throw new IllegalArgumentException("--passes must be 1 or more, got " + passes);
        }

        Properties config = new Properties();
        config.put("bootstrap.servers", args.get("bootstrap"));
        config.put("group.protocol", args.get("group-protocol"));
        if (args.containsKey("group-id")) {
            config.put("group.id", args.get("group-id"));
        }
        config.put("client.id", "bench-" + client);
        config.put("enable.auto.commit", "false");
        config.put("auto.offset.reset", "earliest");
        config.put("max.poll.records", args.getOrDefault("max-poll-records", "10000"));
        config.put("key.deserializer", ByteArrayDeserializer.class.getName());
        config.put("value.deserializer", ByteArrayDeserializer.class.getName());

        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        StringBuilder out = new StringBuilder(RESULT_MARKER).append('{');
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            consumer.assign(tps);
            Pass last = null;
            for (int pass = 1; pass <= passes; pass++) {
                consumer.seekToBeginning(tps);
                last = consume(consumer, client, expect, stallNanos);
            }
            StringBuilder positions = new StringBuilder("{");
            for (TopicPartition tp : tps) {
                if (positions.length() > 1) {
                    positions.append(", ");
                }
                positions.append('"').append(tp.partition()).append("\": ").append(consumer.position(tp));
            }
            positions.append('}');
            String delegate = delegateClass(consumer);

            double user = (last.cpu1[0] - last.cpu0[0]) / (double) clkTck;
            double system = (last.cpu1[1] - last.cpu0[1]) / (double) clkTck;
            out.append("\"client\": ").append(quote(client));
            out.append(", \"records\": ").append(last.count);
            out.append(", \"value_bytes\": ").append(last.valueBytes);
            out.append(", \"wall_s\": ").append((last.end - last.t0) / 1e9);
            out.append(", \"cpu_s\": ").append(user + system);
            out.append(", \"cpu_user_s\": ").append(user);
            out.append(", \"cpu_sys_s\": ").append(system);
            out.append(", \"first_record_s\": ")
                    .append(last.first < 0 ? "null" : Double.toString((last.first - last.t0) / 1e9));
            out.append(", \"first_batch_records\": ").append(last.firstBatch);
            out.append(", \"positions\": ").append(positions);
            out.append(", \"consumer_class\": ").append(quote(delegate));
            out.append(", \"passes\": ").append(passes);
            out.append(", \"group_protocol\": ").append(quote(args.get("group-protocol")));
            out.append(", \"java_version\": ").append(quote(System.getProperty("java.version")));
        }
        // VmHWM once the consumer is closed, as the Python children read theirs after close()
        out.append(", \"peak_rss_mb\": ").append(peakRssKib() / 1024.0);
        out.append(", \"peak_rss_source\": \"VmHWM\"");
        out.append('}');
        System.out.println(out);
        System.out.flush();
    }

    /** One pass over the topic from the positions the caller set: what it counted and when. */
    private static final class Pass {
        long count;
        long valueBytes;
        long firstBatch;
        long first = -1;
        long t0;
        long end;
        long[] cpu0;
        long[] cpu1;
    }

    private static Pass consume(KafkaConsumer<byte[], byte[]> consumer, String client, long expect, long stallNanos)
            throws Exception {
        Pass pass = new Pass();
        Map<Integer, Long> nextOffset = new HashMap<>();
        pass.cpu0 = cpuTicks();
        pass.t0 = System.nanoTime();
        long lastProgress = pass.t0;
        while (pass.count < expect) {
            ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofSeconds(1));
            if (batch.isEmpty()) {
                if (System.nanoTime() - lastProgress > stallNanos) {
                    System.out.println(RESULT_MARKER + "{\"client\": " + quote(client) + ", \"error\": "
                            + quote("no record for " + stallNanos / 1_000_000_000L + " s after " + pass.count
                                    + " records; positions " + nextOffset)
                            + ", \"records\": " + pass.count + "}");
                    System.out.flush();
                    System.exit(2);
                }
                continue;
            }
            long before = pass.count;
            for (TopicPartition tp : batch.partitions()) {
                List<ConsumerRecord<byte[], byte[]>> records = batch.records(tp);
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    pass.valueBytes += record.value().length;
                }
                checkContiguous(nextOffset, tp.partition(), records.get(0).offset(),
                        records.get(records.size() - 1).offset(), records.size());
                pass.count += records.size();
            }
            long now = System.nanoTime();
            if (pass.first < 0) {
                pass.first = now;
                pass.firstBatch = pass.count - before;
            }
            lastProgress = now;
        }
        pass.end = System.nanoTime();
        pass.cpu1 = cpuTicks();
        return pass;
    }

    private static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --key value pairs, got " + String.join(" ", argv));
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String key : new String[] {"client", "group-protocol", "bootstrap", "topic", "partitions", "expect"}) {
            if (!args.containsKey(key)) {
                throw new IllegalArgumentException("missing --" + key);
            }
        }
        return args;
    }

    private static void checkContiguous(Map<Integer, Long> nextOffset, int partition, long first, long last, int n) {
        long want = nextOffset.getOrDefault(partition, 0L);
        if (first != want || last != first + n - 1) {
            throw new IllegalStateException("partition " + partition + ": got offsets " + first + ".." + last + " ("
                    + n + " records), expected to start at " + want);
        }
        nextOffset.put(partition, last + 1);
    }

    /** User and system CPU of the whole process so far, in clock ticks (/proc/self/stat fields 14 and 15). */
    private static long[] cpuTicks() throws Exception {
        String stat = Files.readString(Path.of("/proc/self/stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return new long[] {Long.parseLong(fields[11]), Long.parseLong(fields[12])};
    }

    private static long peakRssKib() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.split("\\s+")[1]);
            }
        }
        throw new IllegalStateException("no VmHWM in /proc/self/status");
    }

    /** Which implementation group.protocol chose (ClassicKafkaConsumer or AsyncKafkaConsumer): KafkaConsumer's
     * private delegate field, read once after the run to confirm the variant. */
    private static String delegateClass(KafkaConsumer<?, ?> consumer) {
        try {
            java.lang.reflect.Field field = KafkaConsumer.class.getDeclaredField("delegate");
            field.setAccessible(true);
            return field.get(consumer).getClass().getSimpleName();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return "unknown (" + e.getClass().getSimpleName() + ")";
        }
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
