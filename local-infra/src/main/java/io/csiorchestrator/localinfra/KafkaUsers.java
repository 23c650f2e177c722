package io.csiorchestrator.localinfra;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AclBindingFilter;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.TopicCatalog;

/**
 * Issues and revokes principals on a secured broker through an admin client: a SCRAM-SHA-512 credential
 * (revocation = delete it; rotation = a second user, then delete the first) and the principal's ACLs from
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

    /** Adds {@code principal}'s ACLs ({@link KafkaAccess#bindings}); existing ones are kept. */
    public void grant(KafkaAccess.Principal principal, TopicCatalog topics) {
        run("grant the ACLs of " + principal.name(), () -> admin.createAcls(KafkaAccess.bindings(principal, topics)).all()
            .get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
    }

    /** A principal with its credential and ACLs in one step. */
    public void issue(KafkaAccess.Principal principal, String password, TopicCatalog topics) {
        upsertCredential(principal.name(), password);
        grant(principal, topics);
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
