package io.csiorchestrator.worker.state;

/**
 * One allocation's publication of the volume. PUBLISHING is recorded (the usage reference is
 * taken) before staging; UNPUBLISHING before the unpublish call. Both mean "uncertain" after a crash.
 */
public enum PublishState {
    PUBLISHING, PUBLISHED, UNPUBLISHING
}
