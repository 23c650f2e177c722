package io.csiorchestrator.events;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;

import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.auth.SslEngineFactory;
import org.apache.kafka.common.security.ssl.DefaultSslEngineFactory;

/**
 * Kafka's {@code ssl.engine.factory.class} for our clients: one TLS context per JVM and TLS setting, shared by every
 * Kafka client of the process, instead of one per client.
 *
 * <p>Why: a service opens about ten clients (consumers, producers, the dead-letter producers, admin). With Kafka's
 * default factory each builds its own {@link SSLContext} from the PEM settings: it parses the chain and the key, puts
 * the key into an in-memory PKCS#12 store (which encrypts it with PBKDF2, 10,000 rounds of HMAC-SHA256) and reads it
 * back out (the same 10,000 rounds again). On our C1-only JVMs that was a third of the Java samples of claim-service's
 * boot. Sharing the context also shares its TLS session cache, so a client connecting to a broker another client of
 * the process already reached may resume, as one client reconnecting always could; a session is offered for
 * {@value #RESUME_SECONDS} s (the JDK's default is 24 h), after which a connection makes a full handshake again.
 *
 * <p>What is shared is keyed by every {@code ssl.*} setting Kafka hands the factory, with the content of any store
 * file named (a rotated trust file or key file makes a new context for the clients created after it; running clients
 * keep theirs, as with Kafka's own factory). {@link #close()} leaves the shared context alone: another client may use
 * it. At most {@value #MAX_CONTEXTS} contexts are kept (a process holds one or two logins; a credential renewal adds
 * one); the eldest goes first, its clients keep working on the engine factory they already hold.
 */
public final class SharedSslEngineFactory implements SslEngineFactory {

    static final int MAX_CONTEXTS = 16;
    /** How long a client offers a TLS session for resumption (see {@link #configure}). */
    static final int RESUME_SECONDS = 300;

    private static final Map<Map<String, String>, DefaultSslEngineFactory> SHARED =
        new LinkedHashMap<>(MAX_CONTEXTS, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Map<String, String>, DefaultSslEngineFactory> eldest) {
                return size() > MAX_CONTEXTS;
            }
        };

    private DefaultSslEngineFactory delegate;

    @Override
    public void configure(Map<String, ?> configs) {
        Map<String, String> key = key(configs);
        synchronized (SHARED) {
            delegate = SHARED.get(key);
            if (delegate == null) {
                DefaultSslEngineFactory created = new DefaultSslEngineFactory();
                created.configure(configs);
                // A resumed session skips the certificate checks of a full handshake; the JDK's client offers its
                // sessions for 24 h by default. Ours offer them for 5 minutes: a certificate that expired or lost
                // its trust is checked again by the next connection after that.
                created.sslContext().getClientSessionContext().setSessionTimeout(RESUME_SECONDS);
                SHARED.put(key, created);
                delegate = created;
            }
        }
    }

    /** The context this factory's engines come from (the same object for every client with the same settings). */
    public SSLContext sslContext() {
        return delegate.sslContext();
    }

    @Override
    public SSLEngine createClientSslEngine(String peerHost, int peerPort, String endpointIdentification) {
        return delegate.createClientSslEngine(peerHost, peerPort, endpointIdentification);
    }

    @Override
    public SSLEngine createServerSslEngine(String peerHost, int peerPort) {
        return delegate.createServerSslEngine(peerHost, peerPort);
    }

    @Override
    public boolean shouldBeRebuilt(Map<String, Object> nextConfigs) {
        return delegate.shouldBeRebuilt(nextConfigs);
    }

    @Override
    public Set<String> reconfigurableConfigs() {
        return delegate.reconfigurableConfigs();
    }

    @Override
    public KeyStore keystore() {
        return delegate.keystore();
    }

    @Override
    public KeyStore truststore() {
        return delegate.truststore();
    }

    /** Leaves the shared context open: other clients of this process may be using it. */
    @Override
    public void close() {
        delegate = null;
    }

    /** Every TLS setting ({@code ssl.*}) as text (a password's value, not its mask), plus a digest of each store file named. */
    static Map<String, String> key(Map<String, ?> configs) {
        Map<String, String> key = new TreeMap<>();
        configs.forEach((name, value) -> {
            // Kafka hands the factory the client's whole configuration; Kafka's factory reads only the ssl.* ones.
            if (value == null || !name.startsWith("ssl.") || SslConfigs.SSL_ENGINE_FACTORY_CLASS_CONFIG.equals(name)) {
                return;
            }
            key.put(name, value instanceof Password password ? password.value()
                : value instanceof Class<?> type ? type.getName() : String.valueOf(value));
        });
        for (String file : new String[] {SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG}) {
            String location = key.get(file);
            if (location != null) {
                key.put(file + "#sha256", digest(Path.of(location)));
            }
        }
        return key;
    }

    private static String digest(Path file) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (NoSuchFileException e) {
            return "absent"; // Kafka's own factory reports the missing file when it builds the context
        } catch (IOException e) {
            return "unreadable:" + e.getClass().getSimpleName();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }
}
