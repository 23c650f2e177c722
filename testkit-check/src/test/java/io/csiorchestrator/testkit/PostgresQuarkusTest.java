package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.eclipse.microprofile.config.ConfigProvider;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.testkit.app.Note;
import io.quarkus.hibernate.reactive.panache.Panache;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;

/** Hibernate Reactive (Panache) against the embedded PostgreSQL of {@link PostgresResource}. */
@QuarkusTest
@QuarkusTestResource(value = PostgresResource.class, restrictToAnnotatedClass = false, parallel = true)
class PostgresQuarkusTest {

    @ConfigProperty(name = "quarkus.datasource.reactive.url")
    String reactiveUrl;

    @Test
    void writesAndReadsThroughHibernateReactive() throws Throwable {
        Long id = VertxContextSupport.subscribeAndAwait(() -> Panache.withTransaction(() -> {
            Note note = new Note();
            note.text = "volume vol-1 claimed";
            return note.persist().map(persisted -> note.id);
        }));
        assertNotNull(id);

        Note found = VertxContextSupport.subscribeAndAwait(() -> Panache.withSession(() -> Note.<Note>findById(id)));
        assertEquals("volume vol-1 claimed", found.text);

        List<Note> all = VertxContextSupport.subscribeAndAwait(() -> Panache.withSession(() -> Note.<Note>listAll()));
        assertEquals(1, all.size());
    }

    @Test
    void jdbcUrlPointsAtTheSameDatabase() {
        // Returned even without the JDBC extension: services read it themselves (Flyway over plain JDBC).
        assertEquals("jdbc:" + reactiveUrl,
            ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class));
        assertEquals("postgres", ConfigProvider.getConfig().getValue("quarkus.datasource.username", String.class));
    }

    @Test
    void eachResourceStartGetsItsOwnDatabase() throws Throwable {
        assertTrue(reactiveUrl.matches("postgresql://127\\.0\\.0\\.1:\\d+/test_\\d+"), reactiveUrl);
        String database = VertxContextSupport.subscribeAndAwait(() -> Panache.withSession(() -> Panache.getSession()
            .flatMap(session -> session.createNativeQuery("select current_database()", String.class).getSingleResult())));
        assertTrue(reactiveUrl.endsWith("/" + database), database + " vs " + reactiveUrl);
    }
}
