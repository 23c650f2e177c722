package io.csiorchestrator.localinfra;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import java.time.Duration;
import java.time.Instant;
import java.util.Base64;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.RenewDelegationTokenOptions;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AclBindingFilter;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaToken;
import io.csiorchestrator.events.TopicCatalog;

/**
 * Issues and revokes principals on a secured broker through an admin client: a SCRAM-SHA-512 credential
 * (revocation = delete it; rotation = a second user, then delete the first) or an expiring delegation token
 * ({@link #issueToken}: nodes and schedulers; revocation = expire it now), and the principal's ACLs from
 * {@link KafkaAccess}.
 */
public final class KafkaUsers {

    /** SCRAM iterations: Kafka's minimum for SHA-512 is 4096. */
    static final int ITERATIONS = 4096;
    private static final long TIMEOUT_SECONDS = 30;

    private final Admin admin;

    public KafkaUsers(Admin admin) {
        this.admin = admin;
    }

    /** Creates or replaces {@code user}'s SCRAM-SHA-512 credential. */
    public void upsertCredential(String user, String password) {
        run("set the credential of " + user, () -> admin.alterUserScramCredentials(List.of(
            new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, ITERATIONS),
                password))).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /** Deletes {@code user}'s credential: new connections as {@code user} are refused from now on. */
    public void deleteCredential(String user) {
        run("delete the credential of " + user, () -> admin.alterUserScramCredentials(List.of(
            new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * Adds {@code principal}'s ACLs ({@link KafkaAccess#bindings}); existing ones are kept. Returns once the broker
     * answering describes all of them: createAcls completes when the controller committed them, and the broker's
     * authorizer applies the metadata record a moment later, so a client of the principal sending at once could
     * still be refused (seen in ClaimServiceCrashIT: TopicAuthorizationException on a prefix granted just before).
     */
    public void grant(KafkaAccess.Principal principal, TopicCatalog topics) {
        List<org.apache.kafka.common.acl.AclBinding> bindings = KafkaAccess.bindings(principal, topics);
        run("grant the ACLs of " + principal.name(), () -> admin.createAcls(bindings).all()
            .get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        awaitDescribed(principal.name(), bindings);
    }

    /**
     * Waits (up to the admin timeout) until describeAcls lists every one of {@code bindings}. Asked again 20 ms after
     * each answer that lacks one (a delayed executor, no thread held): the Admin API has no notification of an ACL
     * applied, and it is applied within milliseconds.
     */
    private void awaitDescribed(String principal, List<org.apache.kafka.common.acl.AclBinding> bindings) {
        AclBindingFilter ofPrincipal = new AclBindingFilter(org.apache.kafka.common.resource.ResourcePatternFilter.ANY,
            new org.apache.kafka.common.acl.AccessControlEntryFilter("User:" + principal, null,
                org.apache.kafka.common.acl.AclOperation.ANY, org.apache.kafka.common.acl.AclPermissionType.ANY));
        java.util.concurrent.CompletableFuture<Void> applied = new java.util.concurrent.CompletableFuture<>();
        askUntilDescribed(ofPrincipal, bindings, applied);
        try {
            applied.get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            applied.cancel(false);
            throw new IllegalStateException("the ACLs of " + principal + " granted but not applied by the broker after "
                + TIMEOUT_SECONDS + " s", e);
        } catch (InterruptedException e) {
            applied.cancel(false);
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the ACLs of " + principal, e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("could not read the ACLs of " + principal + ": " + e.getCause(), e);
        }
    }

    private void askUntilDescribed(AclBindingFilter filter, List<org.apache.kafka.common.acl.AclBinding> bindings,
                                   java.util.concurrent.CompletableFuture<Void> applied) {
        if (applied.isDone()) {
            return; // given up (timeout or interrupt)
        }
        admin.describeAcls(filter).values().toCompletionStage().whenComplete((seen, failure) -> {
            if (failure != null) {
                applied.completeExceptionally(failure);
            } else if (seen.containsAll(bindings)) {
                applied.complete(null);
            } else {
                java.util.concurrent.CompletableFuture.delayedExecutor(20, TimeUnit.MILLISECONDS)
                    .execute(() -> askUntilDescribed(filter, bindings, applied));
            }
        });
    }

    /** A principal with its credential and ACLs in one step. */
    public void issue(KafkaAccess.Principal principal, String password, TopicCatalog topics) {
        upsertCredential(principal.name(), password);
        grant(principal, topics);
    }

    /**
     * A new delegation token owned by {@code owner} that expires {@code lifetime} from now (the broker refuses it
     * afterwards; at most {@link BrokerSecurity#MAX_TOKEN_LIFETIME}). The admin creates it for the owner, so the
     * owner's client needs no password of its own; the owner's ACLs are not touched ({@link #grant}). A client
     * logged in with a token can neither create nor renew tokens (Kafka refuses it), so a stolen token cannot extend
     * itself.
     */
    public KafkaToken issueToken(String owner, Duration lifetime) {
        if (lifetime.isNegative() || lifetime.isZero() || lifetime.compareTo(BrokerSecurity.MAX_TOKEN_LIFETIME) > 0) {
            throw new IllegalArgumentException("a Kafka token's lifetime must be more than 0 and at most "
                + BrokerSecurity.MAX_TOKEN_LIFETIME.toDays() + " days, not " + lifetime);
        }
        DelegationToken token = get("issue a Kafka token for " + owner, () -> admin.createDelegationToken(
            new CreateDelegationTokenOptions().owner(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, owner))
                // the admin renews and revokes it (Kafka lets only the owner and the renewers do either)
                .renewers(List.of(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, KafkaAccess.ADMIN)))
                .maxLifetimeMs(lifetime.toMillis()))
            .delegationToken().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        TokenInformation info = token.tokenInfo();
        awaitVisible(owner, info.tokenId());
        return new KafkaToken(owner, info.tokenId(), token.hmacAsBase64String(),
            Instant.ofEpochMilli(Math.min(info.expiryTimestamp(), info.maxTimestamp())));
    }

    /**
     * Waits until the broker serves the new token: the controller commits it before the answer, the broker learns it
     * from the metadata log a moment later, and a login before that is refused as invalid credentials.
     */
    private void awaitVisible(String owner, String tokenId) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        long pause = 20;
        while (tokensOf(owner).stream().noneMatch(t -> t.tokenId().equals(tokenId))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Kafka token " + tokenId + " of " + owner + " was created but the broker"
                    + " did not serve it within " + TIMEOUT_SECONDS + " s");
            }
            try {
                TimeUnit.MILLISECONDS.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for Kafka token " + tokenId, e);
            }
            pause = Math.min(pause * 2, 500);
        }
    }

    /** The live (not yet expired) tokens owned by {@code owner}, without their HMACs. */
    public List<TokenInformation> tokensOf(String owner) {
        return liveTokens(owner).stream().map(DelegationToken::tokenInfo).toList();
    }

    /**
     * Revokes every token of {@code owner}: each expires now, so new logins with it are refused at once and an
     * open connection ends at its next re-authentication. Returns how many were revoked.
     */
    public int revokeTokens(String owner) {
        List<DelegationToken> tokens = liveTokens(owner);
        for (DelegationToken t : tokens) {
            run("revoke Kafka token " + t.tokenInfo().tokenId() + " of " + owner, () -> admin.expireDelegationToken(
                t.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1)).expiryTimestamp()
                .get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        }
        return tokens.size();
    }

    /** The tokens of {@code owner} the broker holds and that have not expired yet (the admin sees their HMACs). */
    private List<DelegationToken> liveTokens(String owner) {
        List<DelegationToken> tokens = get("list the Kafka tokens of " + owner, () -> admin.describeDelegationToken(
            new DescribeDelegationTokenOptions().owners(List.of(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, owner))))
            .delegationTokens().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        long now = System.currentTimeMillis();
        return tokens.stream().filter(t -> t.tokenInfo().expiryTimestamp() > now).toList();
    }

    /** Renews {@code token} for {@code period} more (never past the lifetime it was issued with); returns it renewed. */
    public KafkaToken renewToken(KafkaToken token, Duration period) {
        long expiry = get("renew Kafka token " + token.tokenId() + " of " + token.owner(), () -> admin.renewDelegationToken(
            Base64.getDecoder().decode(token.hmac()), new RenewDelegationTokenOptions().renewTimePeriodMs(period.toMillis()))
            .expiryTimestamp().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        return new KafkaToken(token.owner(), token.tokenId(), token.hmac(), Instant.ofEpochMilli(expiry));
    }

    /**
     * Deletes every ACL of {@code principal} (the name, e.g. {@code scheduler-acme}): the authorizer checks each
     * request, so its open connections, whatever their login, may do nothing from now on. Returns how many went.
     */
    public int dropAcls(String principal) {
        AclBindingFilter filter = new AclBindingFilter(org.apache.kafka.common.resource.ResourcePatternFilter.ANY,
            new org.apache.kafka.common.acl.AccessControlEntryFilter("User:" + principal, null,
                org.apache.kafka.common.acl.AclOperation.ANY, org.apache.kafka.common.acl.AclPermissionType.ANY));
        return get("drop the ACLs of " + principal, () -> admin.deleteAcls(List.of(filter)).all()
            .get(TIMEOUT_SECONDS, TimeUnit.SECONDS)).size();
    }

    /** Every ACL on the broker (for checks). */
    public List<org.apache.kafka.common.acl.AclBinding> acls() {
        try {
            return List.copyOf(admin.describeAcls(AclBindingFilter.ANY).values().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading ACLs", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not read ACLs: " + e.getMessage(), e);
        }
    }

    private interface Call {
        void run() throws InterruptedException, ExecutionException, TimeoutException;
    }

    private interface Query<T> {
        T get() throws InterruptedException, ExecutionException, TimeoutException;
    }

    private static <T> T get(String what, Query<T> query) {
        Object[] result = new Object[1];
        run(what, () -> result[0] = query.get());
        @SuppressWarnings("unchecked")
        T value = (T) result[0];
        return value;
    }

    private static void run(String what, Call call) {
        try {
            call.run();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while trying to " + what, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not " + what + ": " + (e.getCause() == null ? e : e.getCause()), e);
        }
    }
}
