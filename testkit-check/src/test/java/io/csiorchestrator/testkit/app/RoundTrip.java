package io.csiorchestrator.testkit.app;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.eclipse.microprofile.reactive.messaging.Channel;
import org.eclipse.microprofile.reactive.messaging.Emitter;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/** Test-only app bean: an emitter writing testkit-roundtrip and a consumer of the same topic. */
@ApplicationScoped
public class RoundTrip {

    @Inject
    @Channel("roundtrip-out")
    Emitter<String> emitter;

    private final List<String> received = new CopyOnWriteArrayList<>();

    public void send(String value) {
        emitter.send(value);
    }

    @Incoming("roundtrip-in")
    void receive(String value) {
        received.add(value);
    }

    public List<String> received() {
        return received;
    }
}
