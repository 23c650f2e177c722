package io.csiorchestrator.worker.telemetry;

/** The worker's meters and spans, handed to the parts that make CSI calls or Kafka records. */
public record Telemetry(WorkerMetrics metrics, WorkerTracing tracing) {

    /** Nothing recorded, nothing traced (plain unit tests). */
    public static Telemetry none() {
        return new Telemetry(WorkerMetrics.unregistered(), WorkerTracing.noop());
    }
}
