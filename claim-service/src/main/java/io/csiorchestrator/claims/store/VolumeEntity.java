package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.persistence.Version;
import java.time.Instant;

/**
 * A registered volume. Secrets and mount flags only ever sealed ({@link #sealedJson}). A claim transaction reads it
 * under its lock and writes it through {@link ClaimStore}; as a Hibernate entity it is registered and read by REST.
 */
@Entity
@Table(name = "volumes")
public class VolumeEntity extends PanacheEntityBase {

    @Id
    @Column(name = "volume_key")
    public String volumeKey;
    public String namespace;
    public String id;
    public String name;
    @Column(name = "external_id")
    public String externalId;
    @Column(name = "plugin_id")
    public String pluginId;
    @Column(name = "access_mode")
    public String accessMode;
    @Column(name = "attachment_mode")
    public String attachmentMode;
    @Column(name = "fs_type")
    public String fsType;
    @Column(name = "mount_flag_count")
    public int mountFlagCount;
    @Column(name = "parameters_json")
    public String parametersJson;
    @Column(name = "context_json")
    public String contextJson;
    @Column(name = "topology_json")
    public String topologyJson;
    @Column(name = "secret_keys_json")
    public String secretKeysJson;
    @Column(name = "sealed_json")
    public String sealedJson;
    @Column(name = "claimed_access_mode")
    public String claimedAccessMode;
    public boolean deleting;
    /** Bumped each time a write claim of the volume is granted (the claims' fencing tokens). */
    @Column(name = "write_generation")
    public long writeGeneration;
    /** 'fence' or 'manual' ({@code domain.Failover}); null = the default, fence. */
    public String failover;
    @Version
    public long version;
    @Column(name = "created_at")
    public Instant createdAt;
    @Column(name = "updated_at")
    public Instant updatedAt;

    public static String key(String namespace, String id) {
        return namespace + "/" + id;
    }

    @Override
    public String toString() {
        return "Volume[" + volumeKey + "]";
    }
}
