// Debezium's embedded engine with a consumer written in Java: the baseline of bench_pg_capture.py.
//
//   javac -cp 'LIBS/*' -d OUT DebeziumSinkConsumer.java
//   java -cp 'OUT:LIBS/*' DebeziumSinkConsumer ENGINE.properties jsonl:/path/out.jsonl|kafka:HOST:PORT EXPECTED
//
// It writes what `lakecdc capture --sink jsonl:PATH` writes (one line per record:
// {"topic":...,"key":<JsonConverter key>,"value":<JsonConverter value>,"headers":[{"key":...,"value":<JSON>}]},
// Debezium's context headers as the header converter writes them) or sends the same key/value/header
// bytes to the same Kafka with the producer settings lakecdc's sink uses (acks=all,
// idempotence, lz4, linger.ms=20). As lakecdc's coordinator, it makes the output durable (fsync, or
// a producer flush) at most once a second and at the end, and marks each batch processed after
// writing it (Debezium then commits offsets every offset.flush.interval.ms).
//
// Prints one JSON line on stdout: records, and the seconds from engine start to the first and the
// last record written (and to the end, after the final flush).

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.Header;
import io.debezium.engine.format.Json;

import java.io.BufferedOutputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class DebeziumSinkConsumer implements DebeziumEngine.ChangeConsumer<ChangeEvent<String, String>> {
    private static final byte[] VALUE = ",\"value\":".getBytes(StandardCharsets.UTF_8);
    private static final byte[] HEADERS = ",\"headers\":[".getBytes(StandardCharsets.UTF_8);
    private static final byte[] END = "]}\n".getBytes(StandardCharsets.UTF_8);
    private static final byte[] NULL = "null".getBytes(StandardCharsets.UTF_8);
    private static final long DURABLE_EVERY_NS = 1_000_000_000L;

    private final FileOutputStream file;
    private final BufferedOutputStream out;
    private final KafkaProducer<byte[], byte[]> producer;
    private final long expected;
    private final long started = System.nanoTime();
    private final CountDownLatch done = new CountDownLatch(1);
    private String lastTopic;
    private byte[] lastPrefix;
    private long count;
    private long first = -1;
    private long last = -1;
    private long lastDurable = System.nanoTime();
    private volatile String failure;

    DebeziumSinkConsumer(String target, long expected) throws Exception {
        this.expected = expected;
        if (target.startsWith("jsonl:")) {
            file = new FileOutputStream(target.substring(6), true);
            out = new BufferedOutputStream(file, 1 << 20);
            producer = null;
        } else if (target.startsWith("kafka:")) {
            Properties p = new Properties();
            p.put("bootstrap.servers", target.substring(6));
            p.put("acks", "all");
            p.put("enable.idempotence", "true");
            p.put("compression.type", "lz4");
            p.put("linger.ms", "20");
            p.put("key.serializer", ByteArraySerializer.class.getName());
            p.put("value.serializer", ByteArraySerializer.class.getName());
            producer = new KafkaProducer<>(p);
            file = null;
            out = null;
        } else {
            throw new IllegalArgumentException("target must be jsonl:PATH or kafka:HOST:PORT, not " + target);
        }
    }

    @Override
    public void handleBatch(List<ChangeEvent<String, String>> records,
                            DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer)
            throws InterruptedException {
        try {
            for (ChangeEvent<String, String> r : records) {
                String key = r.key();
                String value = r.value();
                List<Header<Object>> headers = r.headers();
                if (producer != null) {
                    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(r.destination(),
                            key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                            value == null ? null : value.getBytes(StandardCharsets.UTF_8));
                    for (Header<Object> h : headers) {
                        record.headers().add(h.getKey(), bytes(h.getValue()));
                    }
                    producer.send(record);
                } else {
                    out.write(prefix(r.destination()));
                    out.write(key == null ? NULL : key.getBytes(StandardCharsets.UTF_8));
                    out.write(VALUE);
                    out.write(value == null ? NULL : value.getBytes(StandardCharsets.UTF_8));
                    out.write(HEADERS);
                    boolean more = false;
                    for (Header<Object> h : headers) {
                        if (more) {
                            out.write(',');
                        }
                        more = true;
                        out.write(("{\"key\":\"" + h.getKey() + "\",\"value\":").getBytes(StandardCharsets.UTF_8));
                        byte[] v = bytes(h.getValue());
                        out.write(v == null ? NULL : v);
                        out.write('}');
                    }
                    out.write(END);
                }
                committer.markProcessed(r);
            }
            if (out != null) {
                out.flush(); // the batch is in the file (the OS's page cache) before it is marked finished
            }
            long now = System.nanoTime();
            if (count == 0 && !records.isEmpty()) {
                first = now;
            }
            count += records.size();
            if (now - lastDurable >= DURABLE_EVERY_NS) {
                durable();
                lastDurable = System.nanoTime();
            }
            committer.markBatchFinished();
            if (count >= expected && last < 0) {
                last = now;
                done.countDown();
            }
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            failure = e.toString();
            done.countDown();
        }
    }

    /** A header value as the header converter produced it (JSON text). */
    private static byte[] bytes(Object value) {
        if (value == null) {
            return null;
        }
        return value instanceof byte[] ? (byte[]) value : value.toString().getBytes(StandardCharsets.UTF_8);
    }

    private byte[] prefix(String topic) {
        if (!topic.equals(lastTopic)) {
            String quoted = topic.replace("\\", "\\\\").replace("\"", "\\\"");
            lastPrefix = ("{\"topic\":\"" + quoted + "\",\"key\":").getBytes(StandardCharsets.UTF_8);
            lastTopic = topic;
        }
        return lastPrefix;
    }

    private void durable() throws Exception {
        if (producer != null) {
            producer.flush();
        } else {
            out.flush();
            file.getChannel().force(false);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        DebeziumSinkConsumer consumer = new DebeziumSinkConsumer(args[1], Long.parseLong(args[2]));
        long timeoutS = args.length > 3 ? Long.parseLong(args[3]) : 900;
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class, Json.class, Json.class)
                .using(props)
                .using((success, message, error) -> {
                    if (!success) {
                        consumer.failure = message;
                    }
                    consumer.done.countDown();
                })
                .notifying(consumer)
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(engine);
        boolean finished = consumer.done.await(timeoutS, TimeUnit.SECONDS);
        long end = System.nanoTime();
        try {
            consumer.durable();
            end = System.nanoTime();
            engine.close();
            executor.shutdown();
            executor.awaitTermination(60, TimeUnit.SECONDS);
            if (consumer.producer != null) {
                consumer.producer.close();
            } else {
                consumer.out.close();
            }
        } catch (Exception e) { // the engine stopped on its own after a failure: reported below
            if (consumer.failure == null) {
                consumer.failure = e.toString();
            }
        }
        if (!finished || consumer.failure != null || consumer.count < consumer.expected) {
            System.err.println("Debezium failed or timed out: " + consumer.failure + " (" + consumer.count + "/"
                    + consumer.expected + " records)");
            System.exit(2);
        }
        double s = 1e-9;
        System.out.println("{\"records\":" + consumer.count + ",\"first\":" + (consumer.first - consumer.started) * s
                + ",\"last\":" + (consumer.last - consumer.started) * s + ",\"total\":" + (end - consumer.started) * s
                + "}");
        System.exit(0);
    }
}
