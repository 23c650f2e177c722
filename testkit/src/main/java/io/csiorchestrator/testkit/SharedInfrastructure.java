package io.csiorchestrator.testkit;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * The per-JVM singletons behind {@link KafkaResource} and {@link PostgresResource}.
 *
 * <p>Quarkus loads test classes (and possibly test resources) through its own class loaders, each with its own
 * copy of this module's classes and their statics. To keep one broker and one PostgreSQL per JVM whatever the
 * loader, every copy delegates to the copy of {@link Holder} in the system class loader when that loader can see
 * it (as under Surefire and IDEs), passing only JDK types across.
 */
final class SharedInfrastructure {

    private SharedInfrastructure() {
    }

    /** {@code bootstrap.servers} of the JVM's shared broker, started on first call. */
    static String kafkaBootstrapServers() {
        return (String) call("kafkaBootstrapServers", new Class<?>[0]);
    }

    /** {@code [port, username, password]} of the JVM's shared PostgreSQL, started on first call. */
    static String[] postgresCoordinates() {
        return (String[]) call("postgresCoordinates", new Class<?>[0]);
    }

    /** Creates a fresh database {@code test_<n>} on the shared PostgreSQL and returns its name. */
    static String postgresCreateDatabase() {
        return (String) call("postgresCreateDatabase", new Class<?>[0]);
    }

    static void postgresDropDatabase(String name) {
        call("postgresDropDatabase", new Class<?>[] {String.class}, name);
    }

    private static Object call(String method, Class<?>[] types, Object... args) {
        Class<?> holder = sharedHolderClass();
        if (holder == Holder.class) {
            return Holder.dispatch(method, args);
        }
        try {
            Method dispatch = holder.getDeclaredMethod("dispatch", String.class, Object[].class);
            dispatch.setAccessible(true);
            return dispatch.invoke(null, method, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException runtime) {
                throw runtime;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw new IllegalStateException(cause);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Cannot reach the shared test infrastructure", e);
        }
    }

    private static Class<?> sharedHolderClass() {
        try {
            return Class.forName(Holder.class.getName(), true, ClassLoader.getSystemClassLoader());
        } catch (ClassNotFoundException | LinkageError notVisible) {
            return Holder.class;
        }
    }

    /** Holds the singletons; only its copy in the system class loader is used when there is one. */
    static final class Holder {
        private static final Object KAFKA_LOCK = new Object();
        private static final Object POSTGRES_LOCK = new Object();
        private static KafkaBroker kafka;
        private static EmbeddedPostgresServer postgres;

        private Holder() {
        }

        static Object dispatch(String method, Object[] args) {
            switch (method) {
                case "kafkaBootstrapServers":
                    return kafka().bootstrapServers();
                case "postgresCoordinates": {
                    EmbeddedPostgresServer server = postgres();
                    return new String[] {String.valueOf(server.port()), server.username(), server.password()};
                }
                case "postgresCreateDatabase":
                    return postgres().createDatabase();
                case "postgresDropDatabase":
                    postgres().dropDatabase((String) args[0]);
                    return null;
                default:
                    throw new IllegalArgumentException(method);
            }
        }

        private static KafkaBroker kafka() {
            synchronized (KAFKA_LOCK) {
                if (kafka == null) {
                    KafkaBroker broker = KafkaBroker.start();
                    Runtime.getRuntime().addShutdownHook(new Thread(broker::close, "csi-testkit-kafka-shutdown"));
                    kafka = broker;
                }
                return kafka;
            }
        }

        private static EmbeddedPostgresServer postgres() {
            synchronized (POSTGRES_LOCK) {
                if (postgres == null) {
                    EmbeddedPostgresServer server = EmbeddedPostgresServer.start();
                    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "csi-testkit-postgres-shutdown"));
                    postgres = server;
                }
                return postgres;
            }
        }
    }
}
