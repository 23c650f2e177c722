package io.csiorchestrator.claims.store;

import java.time.Instant;

/**
 * A registered volume, a row of {@code volumes}. Secrets and mount flags only ever sealed ({@link #sealedJson}). Every
 * change goes through a claim transaction's {@link ClaimStore} (read under its lock, written at the end, registered
 * with {@link ClaimStore#insert(VolumeEntity)}); {@link VolumeRows} reads it without a lock, for REST.
 */
public class VolumeEntity {

    public String volumeKey;
    public String namespace;
    public String id;
    public String name;
    public String externalId;
    public String pluginId;
    public String accessMode;
    public String attachmentMode;
    public String fsType;
    public int mountFlagCount;
    public String parametersJson;
    public String contextJson;
    public String topologyJson;
    public String secretKeysJson;
    public String sealedJson;
    public String claimedAccessMode;
    public boolean deleting;
    /** Bumped each time a write claim of the volume is granted (the claims' fencing tokens). */
    public long writeGeneration;
    /** 'fence' or 'manual' ({@code domain.Failover}); null = the default, fence. */
    public String failover;
    /** Bumped by {@link ClaimStore} on each write of the row. */
    public long version;
    public Instant createdAt;
    public Instant updatedAt;

    public static String key(String namespace, String id) {
        return namespace + "/" + id;
    }

    @Override
    public String toString() {
        return "Volume[" + volumeKey + "]";
    }
}
