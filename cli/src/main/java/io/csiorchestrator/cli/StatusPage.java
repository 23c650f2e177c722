package io.csiorchestrator.cli;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

/**
 * {@code csi status-page}: a one-time login link to the status page (issue 35 item 1). claim-service issues a code for
 * the CLI's token ({@code POST /v1/status/login-codes}); the link {@code <claims-url>/status/#login=<code>} logs a
 * browser in once, within 60 s, with that token in the page's cookie. The token itself is never printed.
 */
final class StatusPage {

    static final Set<String> OPTIONS = Set.of("no-open");

    private StatusPage() {
    }

    static int run(Args args, Endpoints endpoints, Map<String, String> env, PrintStream out, PrintStream err) {
        if (endpoints.token() == null) {
            throw new Args.UsageException("no token to log in with: ./csi up writes .csi/up/admin.token (or "
                    + "<work-dir>/admin.token); else --token-file F or CSI_TOKEN");
        }
        Http.Response r = new Http("claim-service", endpoints.claimsUrl(), endpoints.token())
                .post("/v1/status/login-codes", "{}");
        if (r.status() != 201 || r.body() == null) {
            throw new Operator.Failure("claim-service at " + endpoints.claimsUrl() + " gave no login code: HTTP "
                    + r.status() + " " + r.error());
        }
        String link = endpoints.claimsUrl() + r.body().path("link").asText();
        out.println(link);
        err.println("csi status-page: a one-time login link, good once until " + r.body().path("expiresAt").asText()
                + " (60 s); it logs the browser in with this CLI's token (the page's cookie csi_token, for the browser"
                + " session)");
        if (!args.flag("no-open") && opener(env) != null) {
            try {
                new ProcessBuilder(opener(env), link).redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                err.println("csi status-page: opened with " + opener(env) + " (--no-open: only print it)");
            } catch (java.io.IOException e) {
                err.println("csi status-page: could not open a browser (" + e.getMessage() + "); open the link above");
            }
        }
        return 0;
    }

    /** xdg-open when there is a desktop session to open a browser in, else null (the link is printed only). */
    static String opener(Map<String, String> env) {
        boolean display = notBlank(env.get("DISPLAY")) || notBlank(env.get("WAYLAND_DISPLAY"));
        if (!display) {
            return null;
        }
        for (String dir : env.getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "xdg-open"))) {
                return Path.of(dir, "xdg-open").toString();
            }
        }
        return null;
    }

    private static boolean notBlank(String s) {
        return s != null && !s.isBlank();
    }
}
