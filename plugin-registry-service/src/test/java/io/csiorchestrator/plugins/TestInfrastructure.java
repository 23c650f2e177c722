package io.csiorchestrator.plugins;

import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.PostgresResource;
import io.quarkus.test.common.QuarkusTestResource;

/**
 * Every Quarkus test of this module runs against the JVM's real Kafka broker (KRaft, in-process) and
 * real PostgreSQL (embedded); each application start gets a fresh database; and the trust file of the tests'
 * record-signing keys (testkit's {@code IdentityResource}).
 */
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, parallel = true)
@QuarkusTestResource(value = PostgresResource.class, restrictToAnnotatedClass = false, parallel = true,
        initArgs = @io.quarkus.test.common.ResourceArg(name = PostgresResource.PROXIED, value = "true"))
@QuarkusTestResource(value = io.csiorchestrator.testkit.IdentityResource.class, restrictToAnnotatedClass = false)
public final class TestInfrastructure {

    private TestInfrastructure() {
    }
}
