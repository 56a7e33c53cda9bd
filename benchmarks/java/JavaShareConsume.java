import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Java's KafkaShareConsumer (KIP-932) as a peer in a share group: for tests that mix it with other share consumers in
 * one group, and for benchmarks.
 *
 * <p>Compiled and run by benchmarks/javashare.py (never committed compiled):
 * {@code java -cp CLASSES:JARS JavaShareConsume --bootstrap H:P --topic T --group G [options]}. Options:
 * <ul>
 * <li>{@code --ack-mode explicit|implicit} (default explicit): {@code share.acknowledgement.mode}. In explicit mode
 * every record of a poll is acknowledged with {@code --ack-type accept|release|reject} (default accept); in implicit
 * mode the client accepts a poll's records itself.</li>
 * <li>{@code --commit sync|async|poll} (default sync): after each poll, commitSync, commitAsync, or nothing (the
 * acknowledgements ride on the next poll's ShareFetch).</li>
 * <li>Stop conditions, any of: {@code --count N} (N records confirmed acknowledged), {@code --stop-file PATH} (the
 * file exists), {@code --stdin-eof true} (standard input closes; a parent that dies closes it too),
 * {@code --idle-s S} (no record for S seconds, counted from the start until the first record), and always
 * {@code --max-s S} (default 600).</li>
 * <li>{@code --print records|none|progress} (default records): {@code progress} prints no record lines but
 * {@code P accepted_so_far} after each poll that changed it (for a parent that waits for a whole group's count),
 * {@code --max-poll-records N}, {@code --client-id ID}, and {@code --property key=value} (repeatable) for any other
 * consumer config.</li>
 * <li>{@code --start-file PATH}: after subscribing, print {@code READY} and wait until the file exists before the
 * first poll (a parent starts several members together once all are up).</li>
 * </ul>
 *
 * <p>Standard output: one line per record once the broker has answered its acknowledgement (the
 * AcknowledgementCommitCallback): {@code A|L|J partition offset delivery_count} for a record accepted, released or
 * rejected, {@code F partition offset delivery_count} when the broker refused the acknowledgement (the record may
 * come again, here or to another member). Records whose acknowledgement was never confirmed by the end are printed
 * as {@code U ...}. Last comes {@code SHARE_RESULT {json}}: counts, wall time from the first poll to the last record,
 * records/s, and the wall clock (ms since the epoch) of the first record, the last record and the last
 * acknowledgement confirmed as accepted. Only an {@code A} line means the group will not deliver that record again.
 */
public final class JavaShareConsume {
    private static final String RESULT_MARKER = "SHARE_RESULT ";

    private final BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8),
            1 << 16);
    private final boolean printRecords;
    private final boolean printProgress;
    private long lastConfirmedEpochMs = -1;
    /** Records polled and acknowledged but not yet confirmed: partition to offset to {delivery count, ack code}. */
    private final Map<Integer, Map<Long, int[]>> pending = new HashMap<>();
    private final Map<Character, Long> confirmed = new HashMap<>();
    private IOException writeFailure;

    private JavaShareConsume(String print) {
        if (!List.of("records", "none", "progress").contains(print)) {
            throw new IllegalArgumentException("--print must be records, none or progress, got " + print);
        }
        this.printRecords = print.equals("records");
        this.printProgress = print.equals("progress");
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        List<String> properties = new ArrayList<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --key value pairs, got " + String.join(" ", argv));
            }
            if (argv[i].equals("--property")) {
                properties.add(argv[i + 1]);
            } else {
                args.put(argv[i].substring(2), argv[i + 1]);
            }
        }
        for (String key : new String[] {"bootstrap", "topic", "group"}) {
            if (!args.containsKey(key)) {
                throw new IllegalArgumentException("missing --" + key);
            }
        }
        JavaShareConsume run = new JavaShareConsume(args.getOrDefault("print", "records"));
        System.exit(run.run(args, properties));
    }

    private int run(Map<String, String> args, List<String> properties) throws Exception {
        String ackMode = args.getOrDefault("ack-mode", "explicit");
        if (!ackMode.equals("explicit") && !ackMode.equals("implicit")) {
            throw new IllegalArgumentException("--ack-mode must be explicit or implicit, got " + ackMode);
        }
        boolean explicit = ackMode.equals("explicit");
        AcknowledgeType ackType = AcknowledgeType.valueOf(args.getOrDefault("ack-type", "accept").toUpperCase(Locale.ROOT));
        if (!explicit && ackType != AcknowledgeType.ACCEPT) {
            throw new IllegalArgumentException("--ack-type " + ackType + " needs --ack-mode explicit");
        }
        String commit = args.getOrDefault("commit", "sync");
        if (!List.of("sync", "async", "poll").contains(commit)) {
            throw new IllegalArgumentException("--commit must be sync, async or poll, got " + commit);
        }
        long count = Long.parseLong(args.getOrDefault("count", "-1"));
        Path stopFile = args.containsKey("stop-file") ? Path.of(args.get("stop-file")) : null;
        long idleNanos = (long) (Double.parseDouble(args.getOrDefault("idle-s", "-1")) * 1e9);
        long maxNanos = (long) (Double.parseDouble(args.getOrDefault("max-s", "600")) * 1e9);
        char code = ackCode(ackType);

        Properties config = new Properties();
        config.put("bootstrap.servers", args.get("bootstrap"));
        config.put("group.id", args.get("group"));
        config.put("client.id", args.getOrDefault("client-id", "java-share"));
        config.put("share.acknowledgement.mode", ackMode);
        if (args.containsKey("max-poll-records")) {
            config.put("max.poll.records", args.get("max-poll-records"));
        }
        for (String property : properties) {
            int eq = property.indexOf('=');
            if (eq < 1) {
                throw new IllegalArgumentException("--property needs key=value, got " + property);
            }
            config.put(property.substring(0, eq), property.substring(eq + 1));
        }

        long polled = 0;
        long redelivered = 0;
        long t0 = System.nanoTime();
        long first = -1;
        long last = -1;
        long firstEpochMs = -1;
        long cpuAtStart = -1;
        long cpuAtStop = -1;
        long lastEpochMs = -1;
        long progressShown = 0;
        String stopReason = null;
        Integer lockTimeoutMs = null;
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            if (Boolean.parseBoolean(args.getOrDefault("stdin-eof", "false"))) {
                watchStdin(consumer);
            }
            consumer.setAcknowledgementCommitCallback(this::onComplete);
            consumer.subscribe(List.of(args.get("topic")));
            if (args.containsKey("start-file")) {
                Path startFile = Path.of(args.get("start-file"));
                out.write("READY");
                out.newLine();
                flush();
                while (!Files.exists(startFile) && !stdinClosed && System.nanoTime() - t0 < maxNanos) {
                    Thread.sleep(5);
                }
                t0 = System.nanoTime();
            }
            cpuAtStart = processCpuNanos();
            while (true) {
                long now = System.nanoTime();
                if (count >= 0 && confirmedTotal() >= count) {
                    stopReason = "count";
                } else if (stdinClosed) {
                    stopReason = "stdin-eof";
                } else if (stopFile != null && Files.exists(stopFile)) {
                    stopReason = "stop-file";
                } else if (idleNanos >= 0 && now - (last < 0 ? t0 : last) > idleNanos) {
                    stopReason = "idle";
                } else if (now - t0 > maxNanos) {
                    stopReason = "max-s";
                }
                if (stopReason != null) {
                    break;
                }
                ConsumerRecords<byte[], byte[]> batch;
                try {
                    batch = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    continue; // standard input closed: the loop's top sees it
                }
                if (lockTimeoutMs == null) {
                    lockTimeoutMs = consumer.acquisitionLockTimeoutMs().orElse(null);
                }
                if (printProgress && confirmedTotal() != progressShown) {
                    progressShown = confirmedTotal();
                    out.write("P " + progressShown);
                    out.newLine();
                }
                if (batch.isEmpty()) {
                    flush();
                    continue;
                }
                last = System.nanoTime();
                lastEpochMs = System.currentTimeMillis();
                if (first < 0) {
                    first = last;
                    firstEpochMs = lastEpochMs;
                }
                for (ConsumerRecord<byte[], byte[]> record : batch) {
                    int deliveries = record.deliveryCount().map(Short::intValue).orElse(-1);
                    if (deliveries > 1) {
                        redelivered++;
                    }
                    pending.computeIfAbsent(record.partition(), p -> new HashMap<>())
                            .put(record.offset(), new int[] {deliveries, code});
                    if (explicit) {
                        consumer.acknowledge(record, ackType);
                    }
                    polled++;
                }
                if (commit.equals("sync")) {
                    consumer.commitSync(); // the callback has run for these by the time it returns
                } else if (commit.equals("async")) {
                    consumer.commitAsync();
                }
                flush();
            }
            cpuAtStop = processCpuNanos();
            consumer.commitSync(); // implicit mode: the last poll's records; explicit: anything still unsent
            consumer.close(Duration.ofSeconds(30));
        }
        long unconfirmed = 0;
        for (Map.Entry<Integer, Map<Long, int[]>> partition : pending.entrySet()) {
            for (Map.Entry<Long, int[]> entry : partition.getValue().entrySet()) {
                unconfirmed++;
                line('U', partition.getKey(), entry.getKey(), entry.getValue()[0]);
            }
        }
        double wall = (last < 0 ? 0 : last - t0) / 1e9;
        StringBuilder result = new StringBuilder(RESULT_MARKER).append('{');
        result.append("\"stop\": \"").append(stopReason).append('"');
        result.append(", \"ack_mode\": \"").append(ackMode).append('"');
        result.append(", \"commit\": \"").append(commit).append('"');
        result.append(", \"polled\": ").append(polled);
        result.append(", \"redelivered\": ").append(redelivered);
        result.append(", \"accepted\": ").append(confirmed.getOrDefault('A', 0L));
        result.append(", \"released\": ").append(confirmed.getOrDefault('L', 0L));
        result.append(", \"rejected\": ").append(confirmed.getOrDefault('J', 0L));
        result.append(", \"failed\": ").append(confirmed.getOrDefault('F', 0L));
        result.append(", \"unconfirmed\": ").append(unconfirmed);
        result.append(", \"wall_s\": ").append(wall);
        result.append(", \"first_record_s\": ").append(first < 0 ? "null" : Double.toString((first - t0) / 1e9));
        result.append(", \"records_per_s\": ").append(wall > 0 ? polled / wall : 0.0);
        result.append(", \"acquisition_lock_timeout_ms\": ").append(lockTimeoutMs);
        result.append(", \"first_record_epoch_ms\": ").append(firstEpochMs);
        result.append(", \"cpu_run_s\": ").append(cpuAtStart < 0 || cpuAtStop < 0 ? -1 : (cpuAtStop - cpuAtStart) / 1e9);
        result.append(", \"last_record_epoch_ms\": ").append(lastEpochMs);
        result.append(", \"last_confirmed_epoch_ms\": ").append(lastConfirmedEpochMs);
        result.append(", \"java_version\": \"").append(System.getProperty("java.version")).append('"');
        result.append('}');
        out.write(result.toString());
        out.newLine();
        flush();
        if (writeFailure != null) {
            throw writeFailure;
        }
        return 0;
    }

    private volatile boolean stdinClosed;

    /** The CPU time of the whole process (every thread), or -1 when the JVM cannot tell. */
    private static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    /** A daemon thread that reads standard input to its end, then wakes the consumer so the loop stops. */
    private void watchStdin(KafkaShareConsumer<byte[], byte[]> consumer) {
        Thread thread = new Thread(() -> {
            InputStream in = System.in;
            byte[] buffer = new byte[256];
            try {
                while (in.read(buffer) >= 0) {
                    // nothing is read from the parent; only the end of the stream matters
                }
            } catch (IOException e) {
                // a broken pipe ends the stream as well
            }
            stdinClosed = true;
            consumer.wakeup();
        }, "stdin-eof");
        thread.setDaemon(true);
        thread.start();
    }

    /** The AcknowledgementCommitCallback: runs on this thread, inside poll, commitSync or close. */
    private void onComplete(Map<TopicIdPartition, Set<Long>> offsets, Exception exception) {
        for (Map.Entry<TopicIdPartition, Set<Long>> entry : offsets.entrySet()) {
            int partition = entry.getKey().partition();
            Map<Long, int[]> waiting = pending.getOrDefault(partition, Map.of());
            for (long offset : entry.getValue()) {
                int[] known = waiting.remove(offset);
                int deliveries = known == null ? -1 : known[0];
                char kind = exception != null ? 'F' : known == null ? '?' : (char) known[1];
                confirmed.merge(kind, 1L, Long::sum);
                if (kind == 'A') {
                    lastConfirmedEpochMs = System.currentTimeMillis();
                }
                line(kind, partition, offset, deliveries);
            }
        }
        if (exception != null) {
            System.err.println("acknowledgement failed: " + exception);
        }
    }

    private long confirmedTotal() {
        long total = 0;
        for (long n : confirmed.values()) {
            total += n;
        }
        return total - confirmed.getOrDefault('F', 0L);
    }

    private void line(char kind, int partition, long offset, int deliveries) {
        if (!printRecords && kind != 'F' && kind != 'U') {
            return;
        }
        try {
            out.write(kind + " " + partition + " " + offset + " " + deliveries);
            out.newLine();
        } catch (IOException e) {
            writeFailure = e;
        }
    }

    private void flush() {
        try {
            out.flush();
        } catch (IOException e) {
            writeFailure = e;
        }
    }

    private static char ackCode(AcknowledgeType type) {
        switch (type) {
            case ACCEPT:
                return 'A';
            case RELEASE:
                return 'L';
            case REJECT:
                return 'J';
            default:
                throw new IllegalArgumentException("--ack-type must be accept, release or reject, got " + type);
        }
    }
}
