package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.ClaimTimer;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.leader.Leadership;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeListingEntity;
import io.csiorchestrator.claims.store.VolumeListingRows;
import io.csiorchestrator.events.ListedVolumes;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.VolumeListing;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * A record without a volume (issue 14): every {@code csi.provision.list-volumes-interval} (5 minutes; a timer, on the
 * leader only) the volumes created through the services are compared with their plugin's CSI ListVolumes. Per plugin
 * whose plugin-status says {@code listVolumes} (a controller instance advertises LIST_VOLUMES) and that has such
 * volumes, a listing sends {@code list-volumes} commands to a healthy controller instance's node, page after page
 * ({@code next_token}, {@code csi.provision.list-volumes-page-size} entries each), answered on mount-done. Each page
 * marks the volumes it lists listed as of the listing's start ({@code provisions.listed_at}). When the last page is
 * in, every volume of the plugin that exists by its record (created, expanding, expand-failed, delete-failed), that
 * did not change since the listing started and that no page listed is marked {@code unlisted_since} (shown in REST as
 * an abnormal condition "volume not listed by plugin P since T"); a marked volume listed again is cleared. Only a
 * complete listing marks: a failed page (an ABORTED token, the controller gone, no answer in
 * {@code csi.claims.command-timeout}) gives the listing up and the next interval starts over. Nothing is ever
 * deleted, deregistered or refused for a mark: it tells operators that the record may have outlived its volume.
 * Counted: {@code csi.claims.volume.listings} (outcome) and {@code csi.claims.volumes.unlisted} (marked, cleared).
 */
@ApplicationScoped
public class VolumeListings {

    private static final Logger LOG = Logger.getLogger(VolumeListings.class);

    /** The phases in which the record says the plugin holds the volume. */
    static final List<String> HELD = List.of("CREATED", "EXPANDING", "NODE_EXPANDING", "EXPAND_FAILED", "DELETE_FAILED");
    private static final String HELD_SQL = "('CREATED', 'EXPANDING', 'NODE_EXPANDING', 'EXPAND_FAILED', 'DELETE_FAILED')";

    /** A listing of more pages than this is given up (a plugin whose tokens never end). */
    static final int MAX_PAGES = 10_000;

    @Inject
    ClaimService claims;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    ClaimSettings settings;
    @Inject
    ProvisionSettings provisionSettings;
    @Inject
    ClaimTimer timer;
    @Inject
    Leadership leadership;
    @Inject
    ClaimMetrics metrics;
    @Inject
    Transactions transactions;

    /**
     * The listing's timer ({@link ClaimTimer}): every {@code csi.provision.list-volumes-interval} after the previous
     * tick ended, the first a minute after the start ({@code off}: never; the tests call {@link #listAll}). A tick
     * still running when the next falls due is not doubled.
     */
    void onStart(@Observes StartupEvent event) {
        java.time.Duration every = ClaimTimer.interval(provisionSettings.listVolumesInterval());
        if (every == null) {
            LOG.info("volume listings are off (csi.provision.list-volumes-interval)");
            return;
        }
        timer.every("the volume listing tick", java.time.Duration.ofMinutes(1), every, () -> {
            if (ticking.compareAndSet(false, true)) {
                VertxContextSupport.subscribe(() -> tick().toMulti(), s -> s.with(ignored -> { },
                        failure -> ticking.set(false), () -> ticking.set(false)));
            }
        });
    }

    private final java.util.concurrent.atomic.AtomicBoolean ticking = new java.util.concurrent.atomic.AtomicBoolean();

    Uni<Void> tick() {
        if (!leadership.isLeader()) {
            return Uni.createFrom().voidItem();
        }
        return listAll().onFailure().invoke(t -> LOG.warnf("volume listing tick failed: %s", t.toString()))
                .onFailure().recoverWithNull();
    }

    /** Starts a listing of each plugin that has volumes created through the services (unless one is in progress). */
    public Uni<Void> listAll() {
        return transactions.reading(() -> SessionSql.select("SELECT DISTINCT plugin_id FROM provisions"
                        + " WHERE external_id IS NOT NULL AND phase IN " + HELD_SQL + " ORDER BY plugin_id"))
                .map(rows -> rows.stream().map(r -> (String) r[0]).toList())
                .chain(ids -> Multi.createFrom().iterable(ids)
                        .onItem().transformToUniAndConcatenate(id -> start(id)
                                .onFailure().invoke(t -> LOG.warnf("volume listing of plugin %s failed to start: %s", id, t.toString()))
                                .onFailure().recoverWithItem(false))
                        .collect().asList().replaceWithVoid());
    }

    /**
     * Starts a listing of {@code pluginId}'s volumes: the first list-volumes command to a healthy controller instance's
     * node, in the transaction that records the listing. Nothing when the plugin lacks LIST_VOLUMES, has no healthy
     * controller, or a page of a listing is outstanding (a page past its deadline: that listing is given up and this
     * one starts). Whether a command was sent.
     */
    public Uni<Boolean> start(String pluginId) {
        Tx tx = Tx.untraced();
        return claims.inTransaction(tx, () -> plugins.status(pluginId).chain(status -> {
            if (status == null || !Boolean.TRUE.equals(status.listVolumes())) {
                LOG.debugf("volume listing: plugin %s does not advertise LIST_VOLUMES; not compared", pluginId);
                return Uni.createFrom().item(false);
            }
            return plugins.facts(pluginId).chain(facts -> VolumeListings.<Boolean>locked(
                    VolumeListingRows.lockOrCreate(pluginId), listing -> {
                Instant now = Instant.now();
                if (listing.commandId != null && listing.commandDeadline != null && listing.commandDeadline.isAfter(now)) {
                    return Uni.createFrom().item(false);
                }
                if (listing.commandId != null) {
                    listing.lastError = "page " + (listing.pages + 1) + " got no answer from node " + listing.commandNodeId
                            + " within " + settings.commandTimeout();
                    LOG.warnf("volume listing of plugin %s given up: %s", pluginId, listing.lastError);
                    tx.afterCommit(() -> metrics.volumeListing("failed"));
                    listing.commandId = null;
                }
                List<String> controllers = facts.healthyControllerNodes();
                if (controllers.isEmpty()) {
                    listing.lastError = "plugin " + pluginId + " has no healthy controller instance";
                    LOG.infof("volume listing of plugin %s not started: %s", pluginId, listing.lastError);
                    return Uni.createFrom().item(false);
                }
                listing.startedAt = now;
                listing.pages = 0;
                return send(listing, controllers.get(0), null, now, tx).replaceWith(true);
            }));
        }));
    }

    /** A list-volumes answer: matched by command id (a late or repeated one changes nothing). */
    public Uni<Void> onDone(MountDone done, Tx tx) {
        return claims.inTransaction(tx, () -> SessionSql.select("SELECT plugin_id FROM volume_listings WHERE command_id = $1",
                        done.commandId())
                .chain(ids -> VolumeListings.<Void>locked(ids.isEmpty() ? Uni.createFrom().<VolumeListingEntity>nullItem()
                        : VolumeListingRows.lock((String) ids.get(0)[0]), listing -> {
                    if (listing == null || !done.commandId().equals(listing.commandId)) {
                        LOG.debugf("list-volumes answer %s matches no listing in progress", done.commandId());
                        return Uni.createFrom().voidItem();
                    }
                    listing.commandId = null;
                    listing.commandDeadline = null;
                    if (!done.succeeded()) {
                        listing.lastError = "page " + (listing.pages + 1) + ": ListVolumes failed with " + done.errorCode()
                                + ": " + done.errorMessage();
                        LOG.warnf("volume listing of plugin %s given up (the next interval starts over): %s",
                                listing.pluginId, listing.lastError);
                        tx.afterCommit(() -> metrics.volumeListing("failed"));
                        return Uni.createFrom().voidItem();
                    }
                    listing.pages++;
                    ListedVolumes page = done.listed();
                    return listed(listing, page.externalVolumeIds()).chain(() -> {
                        if (page.last()) {
                            return finish(listing, tx);
                        }
                        if (listing.pages >= MAX_PAGES) {
                            listing.lastError = "more than " + MAX_PAGES + " pages; given up";
                            LOG.warnf("volume listing of plugin %s: %s", listing.pluginId, listing.lastError);
                            tx.afterCommit(() -> metrics.volumeListing("failed"));
                            return Uni.createFrom().voidItem();
                        }
                        // the next page from the same controller instance: the token is that instance's answer
                        return send(listing, done.nodeId(), page.nextToken(), Instant.now(), tx);
                    });
                })));
    }

    /**
     * Runs {@code work} on the listing {@code lock} reads locked (null when there is none), then writes the row if
     * {@code work} changed it, in the same transaction.
     */
    private static <T> Uni<T> locked(Uni<VolumeListingEntity> lock, Function<VolumeListingEntity, Uni<T>> work) {
        return lock.chain(listing -> {
            if (listing == null) {
                return work.apply(null);
            }
            Object[] stored = VolumeListingRows.values(listing);
            return work.apply(listing).call(() -> VolumeListingRows.saveIfChanged(listing, stored));
        });
    }

    private Uni<Void> send(VolumeListingEntity listing, String node, String token, Instant now, Tx tx) {
        listing.commandId = "list-volumes." + listing.pluginId + "." + (listing.pages + 1) + "."
                + UUID.randomUUID().toString().substring(0, 8);
        listing.commandNodeId = node;
        listing.commandDeadline = now.plus(settings.commandTimeout());
        int pageSize = Math.max(1, Math.min(VolumeListing.MAX_ENTRIES, provisionSettings.listVolumesPageSize()));
        return outbox.add(NodeCommand.listVolumes(listing.commandId, node, listing.pluginId,
                new VolumeListing(token, pageSize), now), tx);
    }

    /** The plugin's volumes on this page are listed as of the listing's start. */
    private static Uni<Void> listed(VolumeListingEntity listing, List<String> externalIds) {
        if (externalIds.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return SessionSql.update("UPDATE provisions SET listed_at = $1 WHERE plugin_id = $2"
                        + " AND external_id = ANY(CAST($3 AS text[]))", listing.startedAt, listing.pluginId,
                externalIds.toArray(new String[0])).replaceWithVoid();
    }

    /**
     * The last page is in: the plugin's volumes held by their record, unchanged since the listing started and not
     * listed by it are marked (once: the first listing that missed them); marked ones listed now are cleared.
     */
    private Uni<Void> finish(VolumeListingEntity listing, Tx tx) {
        Instant now = Instant.now();
        listing.completedAt = now;
        listing.lastError = null;
        String missing = "FROM provisions WHERE plugin_id = $1 AND external_id IS NOT NULL AND phase IN " + HELD_SQL
                + " AND updated_at < $2 AND (listed_at IS NULL OR listed_at < $2)";
        return keys(SessionSql.select("SELECT volume_key " + missing + " AND unlisted_since IS NULL ORDER BY volume_key",
                        listing.pluginId, listing.startedAt))
                .chain(marked -> keys(SessionSql.select("SELECT volume_key FROM provisions WHERE plugin_id = $1"
                                + " AND unlisted_since IS NOT NULL AND listed_at >= $2 ORDER BY volume_key",
                                listing.pluginId, listing.startedAt))
                        .chain(cleared -> (marked.isEmpty() ? Uni.createFrom().item(0) : SessionSql.update(
                                        "UPDATE provisions SET unlisted_since = $1 WHERE unlisted_since IS NULL"
                                                + " AND volume_key = ANY(CAST($2 AS text[]))", now, marked.toArray(new String[0])))
                                .chain(() -> cleared.isEmpty() ? Uni.createFrom().item(0) : SessionSql.update(
                                        "UPDATE provisions SET unlisted_since = NULL WHERE volume_key = ANY(CAST($1 AS text[]))",
                                        (Object) cleared.toArray(new String[0])))
                                .invoke(() -> {
                                    for (String key : marked) {
                                        LOG.warnf("volume %s: not listed by plugin %s (ListVolumes of %s, %d page(s));"
                                                + " marked abnormal, nothing deleted", key, listing.pluginId,
                                                listing.startedAt, listing.pages);
                                    }
                                    for (String key : cleared) {
                                        LOG.infof("volume %s: listed by plugin %s again; mark cleared", key, listing.pluginId);
                                    }
                                    LOG.debugf("volume listing of plugin %s complete: %d page(s), %d marked, %d cleared",
                                            listing.pluginId, listing.pages, marked.size(), cleared.size());
                                    tx.afterCommit(() -> {
                                        metrics.volumeListing("complete");
                                        metrics.unlisted("marked", marked.size());
                                        metrics.unlisted("cleared", cleared.size());
                                    });
                                })))
                .replaceWithVoid();
    }

    /** The first column of each row: the keys a SELECT of one column found. */
    private static Uni<List<String>> keys(Uni<List<Object[]>> rows) {
        return rows.map(all -> all.stream().map(r -> (String) r[0]).toList());
    }

    /** The condition REST shows for a volume marked unlisted, or null. */
    public static String condition(String pluginId, Instant unlistedSince) {
        return unlistedSince == null ? null : "volume not listed by plugin " + pluginId + " since " + unlistedSince;
    }
}
