package io.csiorchestrator.hostpath;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * {@code java -jar csi-hostpath-plugin.jar --endpoint unix:///path/csi.sock --node-id N --state-dir D [options]};
 * see {@link PluginOptions#USAGE}. Runs until SIGTERM or SIGINT.
 */
public final class HostpathPluginMain {

    private HostpathPluginMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        PluginLogging.configure();
        Logger log = Logger.getLogger(HostpathPluginMain.class.getName());
        PluginOptions options;
        try {
            options = PluginOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.print(PluginOptions.USAGE);
            System.exit(2);
            return;
        }
        // The hook is in place before the socket exists, so a SIGTERM at any time stops cleanly.
        AtomicReference<HostpathPlugin> running = new AtomicReference<>();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (running) {
                HostpathPlugin plugin = running.getAndSet(null);
                if (plugin != null) {
                    plugin.close();
                }
            }
            stopped.countDown();
        }, "csi-hostpath-shutdown"));
        try {
            synchronized (running) {
                running.set(HostpathPlugin.start(options, version()));
            }
        } catch (Exception e) {
            log.log(Level.SEVERE, "cannot start the CSI hostpath plugin: " + e.getMessage(), e);
            System.exit(1);
            return;
        }
        stopped.await();
    }

    private static String version() {
        String version = HostpathPluginMain.class.getPackage().getImplementationVersion();
        return version == null ? "dev" : version;
    }
}
