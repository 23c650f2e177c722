package io.csiorchestrator.plugins.domain;

import java.time.Instant;

/** What a {@code plugin-health} report does to the stored instance of its plugin on its node. */
public sealed interface HealthDecision {

    /** The report is newer than what is stored (or the first one): store {@code instance}. */
    record Accepted(PluginInstance instance) implements HealthDecision {
    }

    /** The very report already stored, delivered again: nothing changes. */
    record Duplicate() implements HealthDecision {
    }

    /** An observation older than (or as old as, but different from) the stored one: ignored. */
    record Stale(Instant storedObservedAt) implements HealthDecision {
    }
}
