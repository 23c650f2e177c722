package io.csiorchestrator.plugins;

import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.PostgresResource;
import io.quarkus.test.common.QuarkusTestResource;

/**
 * Every Quarkus test of this module runs against the JVM's real Kafka broker (KRaft, in-process), closed as every
 * deployment's is (SASL_SSL, SCRAM, the StandardAuthorizer: this module's Surefire sets
 * {@code csi.testkit.kafka.secured}), the application connecting as its own principal {@code plugin-registry-service}
 * with exactly its ACLs from events-schema's {@code KafkaAccess} on the test's topics ({@code registry-test.}, the
 * {@code %test} prefix); real PostgreSQL (embedded); each application start gets a fresh database; and the trust file
 * of the tests' record-signing keys (testkit's {@code IdentityResource}).
 */
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, parallel = true, initArgs = {
        @io.quarkus.test.common.ResourceArg(name = KafkaResource.PRINCIPAL, value = "PLUGIN_REGISTRY"),
        @io.quarkus.test.common.ResourceArg(name = KafkaResource.TOPICS_PREFIX, value = "registry-test.")})
@QuarkusTestResource(value = PostgresResource.class, restrictToAnnotatedClass = false, parallel = true,
        initArgs = @io.quarkus.test.common.ResourceArg(name = PostgresResource.PROXIED, value = "true"))
@QuarkusTestResource(value = io.csiorchestrator.testkit.IdentityResource.class, restrictToAnnotatedClass = false)
public final class TestInfrastructure {

    private TestInfrastructure() {
    }
}
