package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

/**
 * Where the services are: flag, else environment variable, else the endpoints file that
 * {@code csi up} writes ({@code .csi/up/endpoints.properties}, or {@code <work-dir>/endpoints.properties}
 * with {@code --work-dir}), else the services' default ports.
 */
public record Endpoints(String claimsUrl, String registryUrl, String kafkaBootstrap, String topicPrefix, String token) {

    static final Set<String> OPTIONS = Set.of("claims-url", "registry-url", "kafka", "topic-prefix", "namespace",
            "home", "token-file", "work-dir");

    public static final String FILE = "endpoints.properties";

    public static Endpoints resolve(Args args, Map<String, String> env, Path home) {
        Properties up = new Properties();
        // --work-dir: the endpoints file of a system `up --work-dir D` started (else .csi/up).
        Path file = Up.workDir(args, home).resolve(FILE);
        if (Files.isRegularFile(file)) {
            try (Reader reader = Files.newBufferedReader(file)) {
                up.load(reader);
            } catch (IOException e) {
                // unreadable: fall back to the defaults
            }
        }
        return new Endpoints(
                pick(args, "claims-url", env, "CSI_CLAIMS_URL", up, "claims.url", "http://localhost:8081"),
                pick(args, "registry-url", env, "CSI_REGISTRY_URL", up, "registry.url", "http://localhost:8082"),
                pick(args, "kafka", env, "CSI_KAFKA_BOOTSTRAP", up, "kafka.bootstrap.servers", "localhost:9092"),
                pick(args, "topic-prefix", env, "CSI_TOPICS_PREFIX", up, "csi.topics.prefix", ""),
                token(args, env, Up.workDir(args, home)));
    }

    /**
     * The bearer token the services want: the file {@code --token-file} names, else {@code CSI_TOKEN}, else the
     * admin token {@code csi up} wrote in its work dir ({@code admin.token}); null when there is none (the
     * services then answer 401).
     */
    static String token(Args args, Map<String, String> env, Path workDir) {
        Optional<String> file = args.option("token-file");
        if (file.isPresent()) {
            return readToken(Path.of(file.get()), "--token-file");
        }
        String fromEnv = env.get("CSI_TOKEN");
        if (fromEnv != null && !fromEnv.isBlank()) {
            return fromEnv.strip();
        }
        Path admin = workDir.resolve(Cluster.ADMIN_TOKEN);
        return Files.isRegularFile(admin) ? readToken(admin, "the admin token") : null;
    }

    private static String readToken(Path file, String what) {
        try {
            return Files.readString(file).strip();
        } catch (IOException e) {
            throw new Args.UsageException("cannot read " + what + " " + file + ": " + e.getMessage());
        }
    }

    private static String pick(Args args, String option, Map<String, String> env, String envName, Properties up,
                               String key, String fallback) {
        String value = args.option(option).orElse(env.get(envName));
        if (value == null || value.isBlank()) {
            value = up.getProperty(key, fallback);
        }
        return stripSlash(value);
    }

    private static String stripSlash(String url) {
        return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    }
}
