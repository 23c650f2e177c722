package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimState;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The status page (claim-service's {@code /status/}) in a real headless Chromium (the OS packages {@code chromium}
 * and {@code chromium-driver}, driven by Selenium; nothing downloaded) against a real system in separate processes
 * (the two-node {@link SharedSystem}, which {@link PluginOutageIT} uses after it):
 * Kafka and PostgreSQL, claim-service, plugin-registry-service, two hostpath plugins and two node-mount-workers with
 * real bind mounts. Screenshots at two widths go to {@code target/status-page/}. Where the browser or its driver is
 * not installed the test fails, naming the packages (never a skip: {@code ./csi test} checks and installs them first).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(SharedSystem.Shared.class)
@Order(4)
class StatusPageIT {

    static final String NS = "default";
    static final String VOLUME = "web";
    static final String SECRET = "s3cr3t-do-not-show";
    static final Duration START = Duration.ofSeconds(180);
    static final Duration CLAIM = Duration.ofSeconds(120);
    static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    static final Path DRIVER = Path.of("/usr/bin/chromedriver");

    private SharedSystem system;
    private Cluster cluster;
    private WebDriver browser;

    @BeforeAll
    void up(SharedSystem system) {
        // the system these ITs share (SharedSystem.Shape.TWO_NODES): started by the first of them, stopped after the last
        this.system = system;
        cluster = system.cluster();
    }

    @AfterEach
    void cleanUp() {
        if (browser != null) {
            browser.quit();
        }
    }

    /**
     * Logged in by {@code ./csi status-page}'s one-time link (issue 35 item 1): the link holds a code, not the token;
     * once the page has loaded, the code is gone from the address bar (the rest of it, the selected volume, stays), the
     * token is in the cookie {@code csi_token}, HttpOnly (the page's script cannot read it; nothing in sessionStorage),
     * and neither the token nor the code is in claim-service's log. The same link opened again (cookies cleared) is
     * refused, and the page says where a token is found.
     * With the page open once (a marker set in its window survives to the end, so it was never reloaded): a write
     * claim made during the test by {@code ./csi volume claim --mount-flag noatime --mount-flag nodiratime --trust-file F}
     * ends ready (each claim-status it printed on the way with the time elapsed), and both flags reached node-1's
     * hostpath plugin (its stage/publish records keep the digest of exactly those flags); the page shows
     * the claim {@code ready} in the volume's claims, one writer, and the ready
     * claim-status in its live feed; released, the claim leaves the claims and is listed under past claims as
     * {@code released}; node-1's hostpath plugin killed (SIGKILL), its instance row turns {@code unhealthy} while
     * node-2's stays {@code healthy}. Neither the volume's secret value nor a mount flag is anywhere in the page.
     * Meanwhile {@code ./csi events -json} printed the claim's ready and released claim-status and a node-events mount
     * as JSON lines, and {@code ./csi volume status web -w} printed the volume again as it changed, the allocation
     * first among the claims, then under past claims. At a phone's width (390 px) the page is no wider than the
     * screen. Screenshots at 1400 and 390 px are saved.
     */
    @Test
    void thePageAndTheCliFollowAClaimWithSealedMountFlagsItsReleaseAndAKilledPlugin() throws Exception {
        assertTrue(Files.isExecutable(CHROMIUM) && Files.isExecutable(DRIVER), CHROMIUM + " or " + DRIVER
                + " is missing: apt-get install -y chromium chromium-driver (./csi test checks for them and, as root,"
                + " installs them)");
        Path target = Path.of("target").toAbsolutePath();
        Path shots = Files.createDirectories(target.resolve("status-page"));
        Path work = cluster.workDir();
        system.pluginsRunning();
        Http claimsApi = system.claims();
        String externalId = PluginVolumes.create(VOLUME, Cluster.NODES.stream().map(cluster::pluginSocket).toList());
        Http.Response registered = claimsApi.post("/v1/volumes", Http.MAPPER.writeValueAsString(Map.of(
                "id", VOLUME, "namespace", NS, "name", VOLUME, "externalId", externalId,
                "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire(), "secrets", Map.of("password", SECRET))));
        assertEquals(201, registered.status(), registered.raw());
        Wait.until(VOLUME + " schedulable", CLAIM, null, () -> claimsApi.get("/v1/volumes/" + NS + "/" + VOLUME)
                .body().path("schedulable").asBoolean() ? Optional.of(true) : Optional.empty());

        // mount flags are sealed for claim-service's public key, found in the cluster's trust file (issue 20 item 4)
        Path trustFile = cluster.identities().trustFile();
        Path tokenFile = work.resolve("test.token");
        Files.writeString(tokenFile, cluster.adminToken());
        String[] endpoints = {"--claims-url", cluster.claimsUrl(), "--registry-url", cluster.registryUrl(),
                "--kafka", cluster.kafkaBootstrap(), "--topic-prefix", Cluster.TOPIC_PREFIX,
                "--token-file", tokenFile.toString(),
                // the cluster's work dir: the CLI signs its claim requests with the scheduler key kept there
                "--work-dir", cluster.workDir().toString()};

        // The page's files load without a token; its data needs one: the operator's way in is ./csi status-page.
        Captured login = Captured.call(cat(new String[] {"status-page", "--no-open"}, endpoints));
        assertEquals(0, login.code(), login.out() + login.err());
        String link = login.out().strip();
        String token = cluster.adminToken();
        String signature = token.substring(token.lastIndexOf('.') + 1);
        assertTrue(link.startsWith(cluster.claimsUrl() + "/status/#login="), link);
        assertFalse((login.out() + login.err()).contains(signature), "the token printed by status-page");
        String code = link.substring(link.indexOf("#login=") + "#login=".length());
        browser = chromium();
        browser.manage().window().setSize(new Dimension(1400, 1000));
        browser.get(link + "&volume=" + NS + "/" + VOLUME);
        JavascriptExecutor js = (JavascriptExecutor) browser;
        waitFor("the live stream connected", () -> "live".equals(text("#live")));
        waitFor("volume " + VOLUME + " listed", () -> present("#volumes tr[data-volume='" + NS + "/" + VOLUME + "']"));
        waitFor("plugin hostpath on node-1 shown healthy", () -> "healthy".equals(instanceHealth("node-1")));
        assertEquals(cluster.claimsUrl() + "/status/#volume=" + NS + "/" + VOLUME, browser.getCurrentUrl(),
                "the login code left the address bar, the selected volume stayed");
        org.openqa.selenium.Cookie cookie = browser.manage().getCookieNamed("csi_token");
        assertTrue(cookie != null && cookie.isHttpOnly() && token.equals(cookie.getValue()),
                "the token in the HttpOnly cookie csi_token: " + (cookie == null ? "none" : "httpOnly " + cookie.isHttpOnly()));
        assertEquals(Boolean.FALSE, js.executeScript("return document.cookie.indexOf(arguments[0]) >= 0 "
                + "|| sessionStorage.length > 0;", signature), "the page's script can read the token");
        assertTrue(js.executeScript("return document.getElementById('auth-help').hidden;").equals(Boolean.TRUE),
                "the not-authorized help is hidden once logged in");
        js.executeScript("window.csiNotReloaded = true;");

        // The CLI's followers, running through the whole test: events (-json) and volume status -w.
        Captured events = Captured.run(cat(new String[] {"events", "-json", "--for", "600s"}, endpoints));
        Captured watch = Captured.run(cat(new String[] {"volume", "status", VOLUME, "-w", "--for", "600s"}, endpoints));
        waitFor("volume status -w printed the volume", () -> watch.out().contains("pluginId"));

        // 1. A claim made now (by the CLI, with two mount flags sealed for claim-service's key from --trust-file) appears,
        // ready, without a reload.
        Captured claim = Captured.call(cat(new String[] {"volume", "claim", VOLUME, "--alloc", "alloc-page", "--node",
                "node-1", "--mode", "write", "--mount-flag", "noatime", "--mount-flag", "nodiratime", "--trust-file",
                trustFile.toString()}, endpoints));
        assertEquals(0, claim.code(), claim.out() + claim.err());
        assertTrue(claim.out().startsWith("ready in "), claim.out());
        // Each claim-status on the way is printed with the time elapsed since the request.
        assertTrue(claim.err().lines().anyMatch(l -> l.matches("\\s+accepted\\s+at \\d+\\.\\d s.*"))
                && claim.err().lines().anyMatch(l -> l.matches("\\s+ready\\s+at \\d+\\.\\d s.*")), claim.err());
        // The flags came through to node-1's plugin: its NodeStage/NodePublish records keep their digest.
        String digest = flagsDigest(List.of("noatime", "nodiratime"));
        try (var files = Files.walk(cluster.workDir().resolve("node-1").resolve("hostpath-state"))) {
            assertTrue(files.filter(Files::isRegularFile).anyMatch(f -> contains(f, digest)),
                    "node-1's hostpath plugin recorded a capability with mount flags noatime, nodiratime");
        }
        waitFor("alloc-page ready in the volume's claims", () -> present("#claims tr[data-alloc='alloc-page'][data-state='ready']"));
        waitFor("the ready claim-status in the live feed", () -> texts("#feed li[data-topic='claim-status']").stream()
                .anyMatch(li -> li.contains("ready") && li.contains("alloc-page")));
        assertEquals("1", text("#volumes tr[data-volume='" + NS + "/" + VOLUME + "'] td:nth-child(5)"), "one writer listed");
        screenshot(shots.resolve("status-page-wide.png"));

        // 2. Released: it moves to past claims.
        ClaimClient client = system.client();
        ClaimClient.Outcome released = client.request(ClaimClient.release(NS, VOLUME, "alloc-page"), CLAIM, null);
        assertTrue(released.is(ClaimState.RELEASED), released.describe());
        waitFor("alloc-page under past claims as released", () -> present("#past-claims tr[data-alloc='alloc-page'][data-state='released']")
                && !present("#claims tr[data-alloc='alloc-page']"));

        // 3. node-1's plugin killed: its instance shows unhealthy, node-2's stays healthy.
        Cluster.Proc plugin = system.plugin("node-1");
        assertTrue(plugin.handle().destroyForcibly(), "SIGKILL sent to " + plugin.name());
        plugin.handle().onExit().get(30, TimeUnit.SECONDS);
        waitFor("plugin hostpath on node-1 shown unhealthy", () -> "unhealthy".equals(instanceHealth("node-1")));
        assertEquals("healthy", instanceHealth("node-2"));
        assertEquals(Boolean.TRUE, js.executeScript("return window.csiNotReloaded === true;"), "the page was never reloaded");
        assertFalse(browser.getPageSource().contains(SECRET), "the volume's secret value is shown");
        assertFalse(browser.getPageSource().contains("noatime"), "a mount flag is shown");

        // The followers saw it all: events the claim's ready and release as JSON lines, the watch the claim move.
        waitFor("events printed the released claim-status", () -> events.out().lines().anyMatch(l ->
                l.contains("\"topic\":\"claim-status\"") && l.contains("\"state\":\"released\"") && l.contains("alloc-page")));
        assertTrue(events.out().lines().anyMatch(l -> l.contains("\"topic\":\"claim-status\"")
                && l.contains("\"state\":\"ready\"") && l.contains("alloc-page")), events.out());
        assertTrue(events.out().lines().anyMatch(l -> l.contains("\"topic\":\"node-events\"")
                && l.contains("\"kind\":\"mount\"")), events.out());
        waitFor("volume status -w printed alloc-page ready, then under past claims", () -> {
            String out = watch.out();
            int ready = out.indexOf("alloc-page");
            int past = out.lastIndexOf("Past claims");
            return ready >= 0 && out.contains("(changed)") && past > ready && out.substring(past).contains("alloc-page");
        });
        assertFalse(watch.err().contains("live events not available"),
                "volume status -w followed claim-service's live events (not a timed refresh): " + watch.err());
        events.stop();
        watch.stop();

        // 4. A phone's width: nothing wider than the screen.
        browser.manage().window().setSize(new Dimension(390, 844));
        waitFor("the page fits 390 px", () -> ((Number) js.executeScript(
                "return document.documentElement.scrollWidth - window.innerWidth;")).intValue() <= 0);
        screenshot(shots.resolve("status-page-phone.png"));

        // 5. The link is good once: opened again without the cookie, the page says it was used and where a token is.
        browser.manage().deleteAllCookies();
        browser.get(link);
        waitFor("the used link refused, the help shown", () -> Boolean.FALSE.equals(js.executeScript(
                "return document.getElementById('auth-help').hidden;")));
        assertTrue(text("#auth-help").contains("./csi status-page") && text("#auth-help").contains(".csi/up/admin.token"),
                text("#auth-help"));
        String claimsLog = Files.readString(system.claimService().log());
        assertFalse(claimsLog.contains(signature), "the token in claim-service's log");
        assertFalse(claimsLog.contains(code), "the login code in claim-service's log");
    }

    /** SHA-256 of the sorted flags, each followed by a 0 byte: the digest the hostpath plugin keeps of them. */
    static String flagsDigest(List<String> flags) throws Exception {
        java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
        for (String flag : new java.util.TreeSet<>(flags)) {
            sha.update(flag.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            sha.update((byte) 0);
        }
        return java.util.HexFormat.of().formatHex(sha.digest());
    }

    private static boolean contains(Path file, String text) {
        try {
            return Files.readString(file).contains(text);
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private static String[] cat(String[] a, String[] b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    /** A {@code ./csi} command run in this JVM ({@link Main#run}), its output captured. */
    record Captured(java.io.ByteArrayOutputStream stdout, java.io.ByteArrayOutputStream stderr, Thread thread, int[] exit) {

        static Captured run(String... argv) {
            var out = new java.io.ByteArrayOutputStream();
            var err = new java.io.ByteArrayOutputStream();
            int[] exit = {-1};
            Thread t = new Thread(() -> exit[0] = Main.run(argv, new java.io.PrintStream(out, true),
                    new java.io.PrintStream(err, true)), "csi " + argv[0]);
            t.setDaemon(true);
            t.start();
            return new Captured(out, err, t, exit);
        }

        static Captured call(String... argv) throws InterruptedException {
            Captured c = run(argv);
            c.thread.join();
            return c;
        }

        String out() {
            synchronized (stdout) {
                return stdout.toString(java.nio.charset.StandardCharsets.UTF_8);
            }
        }

        String err() {
            synchronized (stderr) {
                return stderr.toString(java.nio.charset.StandardCharsets.UTF_8);
            }
        }

        int code() {
            return exit[0];
        }

        void stop() throws InterruptedException {
            thread.interrupt();
            thread.join(30_000);
        }
    }

    private WebDriver chromium() {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--hide-scrollbars", "--force-device-scale-factor=1");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(DRIVER.toString()))
                .usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }

    // The page re-renders its tables on every event: each read is one script in the page (never a held element).

    private String text(String css) {
        return (String) ((JavascriptExecutor) browser).executeScript(
                "var e = document.querySelector(arguments[0]); return e ? e.textContent.trim() : null;", css);
    }

    private boolean present(String css) {
        return text(css) != null;
    }

    /** The texts of every element {@code css} selects. */
    @SuppressWarnings("unchecked")
    private List<String> texts(String css) {
        return (List<String>) ((JavascriptExecutor) browser).executeScript(
                "return Array.from(document.querySelectorAll(arguments[0])).map(function (e) { return e.textContent; });", css);
    }

    /** The health shown for plugin hostpath's instance on {@code node}, or null while there is no such row. */
    private String instanceHealth(String node) {
        return (String) ((JavascriptExecutor) browser).executeScript(
                "var e = document.querySelector(arguments[0]); return e ? e.getAttribute('data-health') : null;",
                "#plugins tr[data-instance='" + Cluster.PLUGIN_ID + "/" + node + "']");
    }

    private void waitFor(String what, java.util.function.BooleanSupplier condition) {
        new WebDriverWait(browser, CLAIM).withMessage(what).until(d -> condition.getAsBoolean());
    }

    private void screenshot(Path to) throws Exception {
        Path taken = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(taken, to, StandardCopyOption.REPLACE_EXISTING);
    }
}
