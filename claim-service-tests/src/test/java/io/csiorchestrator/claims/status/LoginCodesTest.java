package io.csiorchestrator.claims.status;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The status page's one-time login codes, on a clock the test moves (pure logic). */
class LoginCodesTest {

    /** A clock that stands still until the test moves it. */
    static final class Manual extends Clock {
        Instant now = Instant.parse("2026-11-29T09:00:00Z");

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    @Test
    void aCodeIsGoodOnceForItsToken() {
        LoginCodes codes = new LoginCodes(new Manual());
        String code = codes.issue("token-a").getKey();
        assertTrue(code.length() >= 43, "256 random bits, base64url: " + code);
        assertEquals("token-a", codes.redeem(code).orElseThrow().token());
        assertEquals(Optional.empty(), codes.redeem(code), "a second use");
        assertEquals(Optional.empty(), codes.redeem("not-a-code"));
        assertEquals(Optional.empty(), codes.redeem(null));
        assertNotEquals(codes.issue("t").getKey(), codes.issue("t").getKey());
    }

    @Test
    void aCodeExpiresAfterItsTtl() {
        Manual clock = new Manual();
        LoginCodes codes = new LoginCodes(clock);
        String early = codes.issue("token-a").getKey();
        String late = codes.issue("token-b").getKey();
        clock.now = clock.now.plus(LoginCodes.TTL).minusMillis(1);
        assertEquals("token-a", codes.redeem(early).orElseThrow().token(), "still good 1 ms before its end");
        clock.now = clock.now.plusMillis(1);
        assertEquals(Optional.empty(), codes.redeem(late), "expired at its end");
    }

    @Test
    void atMostMaxOpenCodesTheOldestGoFirst() {
        LoginCodes codes = new LoginCodes(new Manual());
        List<String> issued = new ArrayList<>();
        for (int i = 0; i <= LoginCodes.MAX_OPEN; i++) {
            issued.add(codes.issue("token-" + i).getKey());
        }
        assertEquals(Optional.empty(), codes.redeem(issued.get(0)), "the oldest made room");
        assertEquals("token-1", codes.redeem(issued.get(1)).orElseThrow().token());
        assertEquals("token-" + LoginCodes.MAX_OPEN, codes.redeem(issued.get(LoginCodes.MAX_OPEN)).orElseThrow().token());
    }

    @Test
    void aGrantNeverPrintsItsToken() {
        LoginCodes.Grant grant = new LoginCodes(new Manual()).issue("secret-token").getValue();
        assertFalse(grant.toString().contains("secret-token"), grant.toString());
    }
}
