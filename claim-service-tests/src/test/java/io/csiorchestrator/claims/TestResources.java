package io.csiorchestrator.claims;

import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.PostgresResource;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.ResourceArg;

/**
 * The real infrastructure of every test of this module (one Quarkus application for all test
 * classes): the testkit's in-process Kafka broker, closed as every deployment's is (SASL_SSL, SCRAM, the
 * StandardAuthorizer: this module's Surefire and Failsafe set {@code csi.testkit.kafka.secured}), the application
 * connecting as its own principal {@code claim-service} with exactly its ACLs from events-schema's {@code KafkaAccess}
 * on the topics of {@link #PREFIX}; node-commands created with 4 partitions so
 * the service must read the count from the broker, and an embedded PostgreSQL reached through a
 * {@code TcpProxy} ({@code PostgresResource.proxy()}), so a test can take the database away; and the trust file of
 * the tests' record-signing keys ({@code IdentityResource}: records are checked for their signature as in production).
 */
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, initArgs = {
        @ResourceArg(name = KafkaResource.TOPICS, value = "cs-test.node-commands:4"),
        @ResourceArg(name = KafkaResource.PRINCIPAL, value = "CLAIM_SERVICE"),
        @ResourceArg(name = KafkaResource.TOPICS_PREFIX, value = TestResources.PREFIX)})
@QuarkusTestResource(value = PostgresResource.class, restrictToAnnotatedClass = false,
        initArgs = @ResourceArg(name = PostgresResource.PROXIED, value = "true"))
@QuarkusTestResource(value = io.csiorchestrator.testkit.IdentityResource.class, restrictToAnnotatedClass = false)
public final class TestResources {

    public static final String PREFIX = "cs-test.";
    public static final int NODE_COMMAND_PARTITIONS = 4;

    private TestResources() {
    }
}
