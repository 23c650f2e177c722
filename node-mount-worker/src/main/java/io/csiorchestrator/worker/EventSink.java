package io.csiorchestrator.worker;

import io.csiorchestrator.events.ContractEvent;

/** Where the worker's events go (plugin-health, node-events, mount-done). Never blocks on the broker. */
@FunctionalInterface
public interface EventSink {

    void publish(ContractEvent event);
}
