package io.csiorchestrator.support.security;

import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.identity.AuthenticationRequestContext;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.SecurityIdentityAugmentor;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.jwt.JsonWebToken;
import org.jboss.logging.Logger;

/**
 * Refuses (401) a bearer token whose {@code jti} is listed in the deny-list file
 * {@code csi.security.revoked-tokens-file}: one token id a line, {@code #} starts a comment. The file is read
 * again whenever its modification time or size changes (checked on each authenticated request: one
 * {@code stat}), so a revocation takes effect without a restart. No file, no revocations; a file that cannot be
 * read keeps the last list read (and says so in the log, with its path only).
 */
@ApplicationScoped
public class RevokedTokens implements SecurityIdentityAugmentor {

    private static final Logger LOG = Logger.getLogger(RevokedTokens.class);

    @ConfigProperty(name = "csi.security.revoked-tokens-file")
    Optional<Path> file;

    private volatile Snapshot snapshot = new Snapshot(null, -1, Set.of());

    private record Snapshot(FileTime modified, long size, Set<String> ids) {
    }

    @Override
    public Uni<SecurityIdentity> augment(SecurityIdentity identity, AuthenticationRequestContext context) {
        if (identity.isAnonymous() || !(identity.getPrincipal() instanceof JsonWebToken jwt)) {
            return Uni.createFrom().item(identity);
        }
        String jti = jwt.getTokenID();
        if (jti != null && revoked().contains(jti)) {
            // the token id is no secret (it only names the token); the token itself is never logged
            LOG.debugf("refused revoked token id %s", jti);
            return Uni.createFrom().failure(new AuthenticationFailedException("token revoked"));
        }
        return Uni.createFrom().item(identity);
    }

    /** The token ids revoked now. */
    public Set<String> revoked() {
        if (file.isEmpty()) {
            return Set.of();
        }
        Path path = file.get();
        Snapshot last = snapshot;
        try {
            if (!Files.exists(path)) {
                return last.ids().isEmpty() && last.modified() == null ? Set.of() : refresh(null, -1, Set.of());
            }
            FileTime modified = Files.getLastModifiedTime(path);
            long size = Files.size(path);
            if (modified.equals(last.modified()) && size == last.size()) {
                return last.ids();
            }
            Set<String> ids = Files.readAllLines(path).stream().map(l -> l.replaceAll("#.*", "").strip())
                    .filter(l -> !l.isEmpty()).collect(Collectors.toUnmodifiableSet());
            return refresh(modified, size, ids);
        } catch (IOException e) {
            LOG.warnf("cannot read the revoked-tokens file %s (%s); keeping the %d revocations read before",
                    path, e.getClass().getSimpleName(), last.ids().size());
            return last.ids();
        }
    }

    private Set<String> refresh(FileTime modified, long size, Set<String> ids) {
        snapshot = new Snapshot(modified, size, ids);
        LOG.infof("revoked-tokens file %s: %d token ids revoked", file.get(), ids.size());
        return ids;
    }
}
