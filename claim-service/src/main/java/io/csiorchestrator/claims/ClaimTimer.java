package io.csiorchestrator.claims;

import io.csiorchestrator.support.ServiceTimer;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

/**
 * claim-service's one timer thread ({@link ServiceTimer}), for the work that falls due at a moment: the reconcile
 * schedule's due times ({@link ReconcileSchedule}) and the volume listing's interval. (The outbox's safety sweep runs
 * on the relay's own thread.)
 */
@Singleton
public class ClaimTimer extends ServiceTimer {

    public ClaimTimer() {
        super("csi-claims-timer");
    }

    void onStop(@Observes ShutdownEvent event) {
        close();
    }
}
