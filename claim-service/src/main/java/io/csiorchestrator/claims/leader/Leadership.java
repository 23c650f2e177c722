package io.csiorchestrator.claims.leader;

import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.outbox.OutboxRelay;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * This instance's part in the leader election ({@link LeaderElection}, advisory lock
 * {@link LeaderElection#LOCK_KEY}): only the leader runs the outbox relay's drains and the reconciler;
 * every instance consumes and serves the REST API. Leadership changes go to the relay (which starts
 * with its recovery sweep on acquiring), the log, and the gauge {@value #GAUGE} (1 leading, 0 not).
 */
@ApplicationScoped
public class Leadership {

    /** The gauge: 1 on the leader, 0 elsewhere. */
    public static final String GAUGE = "csi.claims.leader";

    @Inject
    Vertx vertx;
    @Inject
    OutboxRelay relay;
    @Inject
    MeterRegistry registry;
    @ConfigProperty(name = "quarkus.datasource.reactive.url")
    Optional<String> reactiveUrl;
    @ConfigProperty(name = "quarkus.datasource.username")
    Optional<String> username;
    @ConfigProperty(name = "quarkus.datasource.password")
    Optional<String> password;
    @Inject
    ClaimSettings settings;
    @Inject
    io.csiorchestrator.claims.ReconcileSchedule reconcile;

    @Inject
    io.csiorchestrator.claims.outbox.OutboxWriter writer;

    private volatile LeaderElection election;
    private volatile Gauge gauge;

    void onStart(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 25) StartupEvent event) {
        gauge = Gauge.builder(GAUGE, this, l -> l.isLeader() ? 1 : 0)
                .description("1 while this instance holds the leader lock (runs the outbox relay and the reconciler)")
                .register(registry);
        election = new LeaderElection(vertx, connectOptions(reactiveUrl.orElse("postgresql://localhost:5432/claims"),
                username.orElse(null), password.orElse(null)), LeaderElection.LOCK_KEY, settings.leader().retryInterval(),
                leads -> {
                    relay.leadershipChanged(leads);
                    reconcile.leadershipChanged(leads);
                }, relay::signal, reconcile::onDueNotification)
                .withWriterLock(writer.key(), held -> {
                    writer.held(held);
                    if (held) {
                        // a writer (re)starts: the relay looks for the rows of writers gone (a process killed after its commits)
                        relay.signal();
                    }
                });
        election.start();
    }

    void onStop(@Observes ShutdownEvent event) {
        LeaderElection e = election;
        if (e != null) {
            e.close();
        }
        // the gauge goes with this instance: Micrometer's global registry (Quarkus') keeps meters across an
        // application restart in one JVM, and would keep reading this stopped instance (ClaimMetrics says more)
        Gauge g = gauge;
        if (g != null) {
            registry.remove(g);
        }
    }

    /** Whether this instance leads now. */
    public boolean isLeader() {
        LeaderElection e = election;
        return e != null && e.isLeader();
    }

    /** This instance's election (tests: its backend pid, its notification count). */
    public LeaderElection election() {
        return election;
    }

    /** Connect options from the reactive datasource URL ({@code [vertx-reactive:]postgresql://...}) and credentials. */
    public static PgConnectOptions connectOptions(String reactiveUrl, String username, String password) {
        String url = reactiveUrl.trim();
        if (url.startsWith("vertx-reactive:")) {
            url = url.substring("vertx-reactive:".length());
        }
        int comma = url.indexOf(',');
        if (comma > 0) {
            url = url.substring(0, comma);
        }
        PgConnectOptions options = PgConnectOptions.fromUri(url);
        if (username != null && !username.isBlank()) {
            options.setUser(username);
        }
        if (password != null && !password.isEmpty()) {
            options.setPassword(password);
        }
        return options;
    }
}
