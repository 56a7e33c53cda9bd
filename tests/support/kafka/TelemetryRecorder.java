// A broker-side KIP-714 receiver for the telemetry tests: every PushTelemetry a broker accepts is decoded with the
// OTLP classes Kafka ships and appended, as one line of JSON, to the file the broker config
// "telemetry.recorder.file" names. Compiled at test time by tests/support/telemetry.py; set as metric.reporters.

import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryContext;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.shaded.io.opentelemetry.proto.common.v1.KeyValue;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

public class TelemetryRecorder implements MetricsReporter, ClientTelemetryExporterProvider {
    private volatile String file;

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get("telemetry.recorder.file");
        file = value == null ? null : value.toString();
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return this::record;
    }

    private void record(ClientTelemetryContext context, ClientTelemetryPayload payload) {
        StringBuilder out = new StringBuilder("{");
        field(out, "client_id", context.authorizableRequestContext().clientId()).append(',');
        field(out, "client_instance_id", payload.clientInstanceId().toString()).append(',');
        out.append("\"terminating\":").append(payload.isTerminating()).append(',');
        out.append("\"push_interval_ms\":").append(context.pushIntervalMs()).append(',');
        field(out, "content_type", payload.contentType()).append(',');
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        out.append("\"size\":").append(bytes.length).append(',');
        try {
            describe(out, MetricsData.parseFrom(bytes));
        } catch (Exception e) {
            field(out, "error", e.toString());
        }
        out.append("}\n");
        write(out.toString());
    }

    private static void describe(StringBuilder out, MetricsData data) {
        out.append("\"resource\":{");
        String sep = "";
        for (ResourceMetrics rm : data.getResourceMetricsList()) {
            for (KeyValue kv : rm.getResource().getAttributesList()) {
                out.append(sep);
                field(out, kv.getKey(), kv.getValue().getStringValue());
                sep = ",";
            }
        }
        out.append("},\"metrics\":[");
        sep = "";
        for (ResourceMetrics rm : data.getResourceMetricsList()) {
            for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                for (Metric m : sm.getMetricsList()) {
                    List<NumberDataPoint> points = m.hasSum() ? m.getSum().getDataPointsList() : m.getGauge().getDataPointsList();
                    for (NumberDataPoint p : points) {
                        out.append(sep).append('{');
                        sep = ",";
                        field(out, "name", m.getName()).append(',');
                        field(out, "scope", sm.getScope().getName()).append(',');
                        field(out, "kind", m.hasSum() ? "sum" : m.hasGauge() ? "gauge" : "other").append(',');
                        if (m.hasSum()) {
                            out.append("\"temporality\":").append(m.getSum().getAggregationTemporalityValue()).append(',');
                            out.append("\"monotonic\":").append(m.getSum().getIsMonotonic()).append(',');
                        }
                        double value = p.getValueCase() == NumberDataPoint.ValueCase.AS_INT ? p.getAsInt() : p.getAsDouble();
                        out.append("\"value\":").append(value).append(',');
                        out.append("\"start\":").append(p.getStartTimeUnixNano()).append(',');
                        out.append("\"time\":").append(p.getTimeUnixNano()).append(",\"attributes\":{");
                        String inner = "";
                        for (KeyValue kv : p.getAttributesList()) {
                            out.append(inner);
                            field(out, kv.getKey(), kv.getValue().getStringValue());
                            inner = ",";
                        }
                        out.append("}}");
                    }
                }
            }
        }
        out.append(']');
    }

    private static StringBuilder field(StringBuilder out, String key, String value) {
        return quote(quote(out, key).append(':'), value);
    }

    private static StringBuilder quote(StringBuilder out, String text) {
        if (text == null) {
            return out.append("null");
        }
        out.append('"');
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"');
    }

    private synchronized void write(String line) {
        if (file == null) {
            return;
        }
        try (Writer w = new FileWriter(file, true)) {
            w.write(line);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
