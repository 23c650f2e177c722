package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The claims and volumes of one claim transaction (issue 36 item 3): read and written with a small fixed set of
 * prepared statements on the transaction's connection ({@link SessionSql}, {@link ClaimTables}). Each row is read
 * once per transaction and kept here by its key (one object per claim and per volume); the changes made to them are written at the end of the transaction,
 * one batched UPDATE per table for the rows that changed and one INSERT per new row ({@link #flush}).
 *
 * <p>Every volume is read under its lock (SELECT ... FOR UPDATE), so the volume and the claims of it read after that
 * are this transaction's alone until it ends. A volume's current claims are read once, together ({@link #complete}),
 * for a poll's volumes at once ({@link #lockVolumes}); after that the volume's current claims are answered from here,
 * with this transaction's changes in them.
 *
 * <p>Opened by {@link #within} around the work of a transaction (the outbox's {@code inTransaction}), kept as a local
 * of the Vert.x context the transaction runs on, where its connection is kept too ({@link Transactions}).
 */
public final class ClaimStore {

    private static final Object KEY = ClaimStore.class;
    private static final String LOCK_VOLUME = "SELECT " + ClaimTables.VOLUMES + " FROM volumes WHERE volume_key = $1 FOR UPDATE";
    private static final String LOCK_VOLUMES = "SELECT " + ClaimTables.VOLUMES + " FROM volumes"
            + " WHERE volume_key = ANY(CAST($1 AS varchar[])) ORDER BY volume_key FOR UPDATE";
    private static final String LOCK_VOLUMES_OF_COMMANDS = "SELECT " + ClaimTables.VOLUMES + " FROM volumes WHERE volume_key IN"
            + " (SELECT volume_key FROM claims WHERE command_id = ANY(CAST($1 AS varchar[]))) ORDER BY volume_key FOR UPDATE";
    private static final String LOCK_VOLUME_OF_COMMAND = "SELECT " + ClaimTables.VOLUMES + " FROM volumes WHERE volume_key ="
            + " (SELECT volume_key FROM claims WHERE command_id = $1) FOR UPDATE";
    private static final String LOCK_VOLUME_OF_CLAIM = "SELECT " + ClaimTables.VOLUMES + " FROM volumes WHERE volume_key ="
            + " (SELECT volume_key FROM claims WHERE claim_id = $1) FOR UPDATE";
    /** The current claims of the volumes, and any of theirs that waits for one of the commands (none, or a few). */
    private static final String CLAIMS_OF_VOLUMES = "SELECT " + ClaimTables.CLAIMS + " FROM claims"
            + " WHERE volume_key = ANY(CAST($1 AS varchar[])) AND (NOT past OR command_id = ANY(CAST($2 AS varchar[])))";
    private static final String CLAIM_BY_ID = "SELECT " + ClaimTables.CLAIMS + " FROM claims WHERE claim_id = $1";
    private static final String CLAIM_BY_COMMAND = "SELECT " + ClaimTables.CLAIMS + " FROM claims WHERE command_id = $1";
    private static final String[] NONE = new String[0];

    /** The volumes read (and locked) in this transaction. */
    private final Map<String, VolumeEntity> volumes = new HashMap<>();
    /** The claims read or created in this transaction, in the order they came. */
    private final Map<String, ClaimEntity> claims = new LinkedHashMap<>();
    /** Each row's values as stored (read, or last written): what {@link #flush} compares with. Absent: a new row. */
    private final Map<Object, Object[]> stored = new IdentityHashMap<>();
    /** The volumes whose current claims are all in {@link #claims}. */
    private final Set<String> complete = new HashSet<>();

    private ClaimStore() {
    }

    /** The store of the transaction running on the current Vert.x context. */
    public static ClaimStore current() {
        Context context = Vertx.currentContext();
        ClaimStore store = context == null ? null : context.getLocal(KEY);
        if (store == null) {
            throw new IllegalStateException("no claim transaction on this context: claims and volumes are read and written"
                    + " inside ClaimService.inTransaction only");
        }
        return store;
    }

    /**
     * Runs {@code work} with a store of its own, then writes what changed ({@link #flush}); call inside a
     * {@link Transactions#inTransaction}. Nested in a transaction that has one, {@code work} shares it (and the outer one writes).
     */
    public static <T> Uni<T> within(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = Vertx.currentContext();
            if (context == null) {
                throw new IllegalStateException("a claim transaction outside a Vert.x context");
            }
            if (context.getLocal(KEY) != null) {
                return work.get();
            }
            ClaimStore store = new ClaimStore();
            context.putLocal(KEY, store);
            return work.get().call(store::flush).onTermination().invoke(() -> {
                if (context.getLocal(KEY) == store) {
                    context.removeLocal(KEY);
                }
            });
        });
    }

    /** Writes what changed, when a claim transaction is open here (before a statement that reads the claims table). */
    public static Uni<Void> flushIfOpen() {
        Context context = Vertx.currentContext();
        ClaimStore store = context == null ? null : context.getLocal(KEY);
        return store == null ? Uni.createFrom().voidItem() : store.flush();
    }

    /** The volume, locked for this transaction; null when it is not registered. */
    public Uni<VolumeEntity> lockVolume(String volumeKey) {
        VolumeEntity known = volumes.get(volumeKey);
        if (known != null) {
            return Uni.createFrom().item(known);
        }
        return SessionSql.select(LOCK_VOLUME, volumeKey).map(rows -> rows.isEmpty() ? null : track(ClaimTables.volume(rows.get(0))));
    }

    /**
     * Locks the volumes of {@code volumeKeys} in key order in one statement (every batch takes its locks up front and in
     * the same order, so two batches never deadlock on each other), and reads their current claims in a second.
     */
    public Uni<Void> lockVolumes(Collection<String> volumeKeys) {
        TreeSet<String> keys = new TreeSet<>(volumeKeys);
        keys.removeAll(volumes.keySet());
        if (keys.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return lockAndRead(LOCK_VOLUMES, keys.toArray(NONE), NONE);
    }

    /** {@link #lockVolumes} for the volumes of the claims waiting for {@code commandIds}' answers, with those claims. */
    public Uni<Void> lockVolumesOfCommands(Collection<String> commandIds) {
        if (commandIds.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        String[] ids = new TreeSet<>(commandIds).toArray(NONE);
        return lockAndRead(LOCK_VOLUMES_OF_COMMANDS, ids, ids);
    }

    private Uni<Void> lockAndRead(String lock, String[] lockParameter, String[] commandIds) {
        return SessionSql.select(lock, (Object) lockParameter).chain(rows -> {
            List<String> locked = new ArrayList<>();
            for (Object[] row : rows) {
                locked.add(track(ClaimTables.volume(row)).volumeKey);
            }
            return readClaims(locked, commandIds);
        });
    }

    /** Reads the current claims of the (locked) volumes, and those of theirs waiting for {@code commandIds}. */
    private Uni<Void> readClaims(List<String> volumeKeys, String[] commandIds) {
        volumeKeys.removeAll(complete);
        if (volumeKeys.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return SessionSql.select(CLAIMS_OF_VOLUMES, volumeKeys.toArray(NONE), commandIds).invoke(rows -> {
            for (Object[] row : rows) {
                track(ClaimTables.claim(row));
            }
            complete.addAll(volumeKeys);
        }).replaceWithVoid();
    }

    /**
     * Locks the volume of the claim waiting for {@code commandId} (a claim's volume never changes) with its current
     * claims; null when no claim matches. The claim is then {@link #claimByCommand}.
     */
    public Uni<VolumeEntity> lockVolumeOfCommand(String commandId) {
        return lockVolumeOf(LOCK_VOLUME_OF_COMMAND, commandId, new String[] {commandId},
                claims.values().stream().filter(c -> commandId.equals(c.commandId)).findFirst().orElse(null));
    }

    /** Locks the volume of claim {@code claimId} with its current claims; null when there is no such claim. */
    public Uni<VolumeEntity> lockVolumeOfClaim(String claimId) {
        return lockVolumeOf(LOCK_VOLUME_OF_CLAIM, claimId, NONE, claims.get(claimId));
    }

    private Uni<VolumeEntity> lockVolumeOf(String lock, String id, String[] commandIds, ClaimEntity known) {
        if (known != null && volumes.containsKey(known.volumeKey)) {
            return Uni.createFrom().item(volumes.get(known.volumeKey));
        }
        return SessionSql.select(lock, id).chain(rows -> {
            if (rows.isEmpty()) {
                return Uni.createFrom().nullItem();
            }
            VolumeEntity volume = track(ClaimTables.volume(rows.get(0)));
            return readClaims(new ArrayList<>(List.of(volume.volumeKey)), commandIds).replaceWith(volume);
        });
    }

    /** The volume's current claims (not past), oldest first, with this transaction's changes. */
    public Uni<List<ClaimEntity>> activeClaims(String volumeKey) {
        if (complete.contains(volumeKey)) {
            return Uni.createFrom().item(active(volumeKey));
        }
        return readClaims(new ArrayList<>(List.of(volumeKey)), NONE).map(x -> active(volumeKey));
    }

    private List<ClaimEntity> active(String volumeKey) {
        List<ClaimEntity> active = new ArrayList<>();
        for (ClaimEntity c : claims.values()) {
            if (!c.past && c.volumeKey.equals(volumeKey)) {
                active.add(c);
            }
        }
        active.sort(Comparator.comparing((ClaimEntity c) -> c.createdAt).thenComparing(c -> c.claimId));
        return active;
    }

    /** The claim now waiting for {@code commandId}'s answer, or null. */
    public Uni<ClaimEntity> claimByCommand(String commandId) {
        for (ClaimEntity c : claims.values()) {
            if (commandId.equals(c.commandId)) {
                return Uni.createFrom().item(c);
            }
        }
        // a claim read here with another command is not the one (its command changed in this transaction)
        return SessionSql.select(CLAIM_BY_COMMAND, commandId).map(rows -> rows.isEmpty()
                || claims.containsKey((String) rows.get(0)[0]) ? null : track(ClaimTables.claim(rows.get(0))));
    }

    /** The claim {@code claimId} (current or past), or null. */
    public Uni<ClaimEntity> claim(String claimId) {
        ClaimEntity known = claims.get(claimId);
        if (known != null) {
            return Uni.createFrom().item(known);
        }
        return SessionSql.select(CLAIM_BY_ID, claimId).map(rows -> rows.isEmpty() ? null : track(ClaimTables.claim(rows.get(0))));
    }

    /** A new claim, inserted when the transaction ends (with its fields as they are then). */
    public void insert(ClaimEntity claim) {
        claims.put(claim.claimId, claim);
    }

    /** A new volume, inserted when the transaction ends; its claims are all here (it has none yet). */
    public void insert(VolumeEntity volume) {
        volumes.put(volume.volumeKey, volume);
        complete.add(volume.volumeKey);
    }

    /** Deletes the volume and all its claims, current and past, now. */
    public Uni<Void> deleteVolume(VolumeEntity volume) {
        String key = volume.volumeKey;
        claims.values().removeIf(c -> {
            if (c.volumeKey.equals(key)) {
                stored.remove(c);
                return true;
            }
            return false;
        });
        boolean storedVolume = stored.remove(volume) != null;
        volumes.remove(key);
        complete.remove(key);
        return SessionSql.update("DELETE FROM claims WHERE volume_key = $1", key)
                .chain(() -> storedVolume ? SessionSql.update("DELETE FROM volumes WHERE volume_key = $1", key)
                        : Uni.createFrom().item(0))
                .replaceWithVoid();
    }

    /**
     * Writes the rows that changed since they were read or last written: new volumes and claims inserted, then the
     * changed ones updated, one batch per table. A volume's version (a count of its writes; every write holds the
     * row's lock, so nothing checks it) goes up with each write.
     */
    public Uni<Void> flush() {
        Writes volumeWrites = changes(volumes.values(), ClaimTables::values, v -> v.version++);
        Writes claimWrites = changes(claims.values(), ClaimTables::values, c -> { });
        return SessionSql.updateAll(ClaimTables.INSERT_VOLUME, volumeWrites.inserts())
                .chain(() -> SessionSql.updateAll(ClaimTables.INSERT_CLAIM, claimWrites.inserts()))
                .chain(() -> SessionSql.updateAll(ClaimTables.UPDATE_VOLUME, volumeWrites.updates()))
                .chain(() -> SessionSql.updateAll(ClaimTables.UPDATE_CLAIM, claimWrites.updates()));
    }

    /** The rows of one table to insert and to update, each its values in column order. */
    private record Writes(List<Object[]> inserts, List<Object[]> updates) {
    }

    /**
     * The rows among {@code rows} that are new or changed since stored ({@code beforeUpdate} run on each changed one
     * first), recorded as stored with the values they will be written with.
     */
    private <T> Writes changes(Collection<T> rows, Function<T, Object[]> values, Consumer<T> beforeUpdate) {
        Writes writes = new Writes(new ArrayList<>(), new ArrayList<>());
        for (T row : rows) {
            Object[] before = stored.get(row);
            Object[] now = values.apply(row);
            if (before == null) {
                writes.inserts().add(now);
            } else if (!ClaimTables.same(before, now)) {
                beforeUpdate.accept(row);
                now = values.apply(row);
                writes.updates().add(now);
            } else {
                continue;
            }
            stored.put(row, now);
        }
        return writes;
    }

    private VolumeEntity track(VolumeEntity read) {
        return track(volumes, read.volumeKey, read, ClaimTables::values);
    }

    private ClaimEntity track(ClaimEntity read) {
        return track(claims, read.claimId, read, ClaimTables::values);
    }

    /** The row of {@code key} this transaction holds already, else {@code read}, held from now on as stored. */
    private <T> T track(Map<String, T> held, String key, T read, Function<T, Object[]> values) {
        T known = held.get(key);
        if (known != null) {
            return known;
        }
        held.put(key, read);
        stored.put(read, values.apply(read));
        return read;
    }
}
