package io.csiorchestrator.testkit;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.KafkaUsers;

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

    /** Whether the JVM's shared broker is closed (SASL_SSL, the authorizer): see {@link #SECURED_PROPERTY}. */
    static boolean kafkaSecured() {
        return (Boolean) call("kafkaSecured", new Class<?>[0]);
    }

    /**
     * {@code [user, password file, CA file]} of a principal on the shared secured broker: {@code role} a
     * {@link KafkaAccess.Role} name ({@code ADMIN} for the super user), {@code id} the node
     * or scheduler id (else empty), its ACLs on the topics of {@code prefix}. Issued once per principal and prefix; a
     * principal keeps its password across prefixes.
     */
    static String[] kafkaCredential(String role, String id, String prefix) {
        return (String[]) call("kafkaCredential", new Class<?>[0], role, id, prefix);
    }

    /**
     * System property (or env {@code CSI_TESTKIT_KAFKA_SECURED}): {@code true} makes the shared broker closed, as every
     * deployment's is. Set per module in its Surefire/Failsafe configuration while the modules move over.
     */
    static final String SECURED_PROPERTY = "csi.testkit.kafka.secured";

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
        /** The principals issued on the shared broker (each keeps its password; a new prefix only adds ACLs). */
        private static final Set<String> ISSUED = new HashSet<>();

        private Holder() {
        }

        static Object dispatch(String method, Object[] args) {
            // Kafka clients made here (issuing credentials) load plugin classes through the context class loader:
            // pin it to this copy's loader, not a caller's (Quarkus's), whose Kafka classes are other classes.
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            thread.setContextClassLoader(Holder.class.getClassLoader());
            try {
                return dispatchHere(method, args);
            } finally {
                thread.setContextClassLoader(previous);
            }
        }

        private static Object dispatchHere(String method, Object[] args) {
            switch (method) {
                case "kafkaBootstrapServers":
                    return kafka().bootstrapServers();
                case "kafkaSecured":
                    return kafka().secured();
                case "kafkaCredential":
                    return credential((String) args[0], (String) args[1], (String) args[2]);
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

        private static String[] credential(String role, String id, String prefix) {
            KafkaBroker broker = kafka();
            String user;
            synchronized (KAFKA_LOCK) {
                if (role.equals("ADMIN")) {
                    user = KafkaAccess.ADMIN;
                } else {
                    KafkaAccess.Principal principal = principal(role, id);
                    user = principal.name();
                    TopicCatalog topics = new TopicCatalog(prefix);
                    if (ISSUED.add(user)) {
                        broker.issue(principal, topics);
                    } else {
                        try (Admin admin = broker.admin()) {
                            new KafkaUsers(admin).grant(principal, topics);
                        }
                    }
                }
            }
            return new String[] {user, broker.passwordFileOf(user).toString(), broker.truststore().toString()};
        }

        private static KafkaAccess.Principal principal(String role, String id) {
            return switch (KafkaAccess.Role.valueOf(role)) {
                case CLAIM_SERVICE -> KafkaAccess.Principal.claimService();
                case PLUGIN_REGISTRY -> KafkaAccess.Principal.pluginRegistry();
                case NODE -> KafkaAccess.Principal.node(id);
                case SCHEDULER -> KafkaAccess.Principal.scheduler(id);
                case OPERATOR -> KafkaAccess.Principal.operator();
                case BENCH -> KafkaAccess.Principal.bench();
                case SIMULATOR -> KafkaAccess.Principal.simulator();
            };
        }

        private static boolean securedByConfiguration() {
            String value = System.getProperty(SECURED_PROPERTY, System.getenv("CSI_TESTKIT_KAFKA_SECURED"));
            return Boolean.parseBoolean(value);
        }

        private static KafkaBroker kafka() {
            synchronized (KAFKA_LOCK) {
                if (kafka == null) {
                    KafkaBroker broker = KafkaBroker.builder().secured(securedByConfiguration()).start();
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
