package io.csiorchestrator.hostpath;

/** Index paging of List* calls: the token is the index of the next entry; a bad token is ABORTED (CSI). */
final class Paging {

    private Paging() {
    }

    static int start(String token, int size) {
        if (token.isEmpty()) {
            return 0;
        }
        int start;
        try {
            start = Integer.parseInt(token);
        } catch (NumberFormatException e) {
            start = -1;
        }
        if (start < 0 || start > size) {
            throw CsiStatus.aborted("starting_token " + token + " is not valid");
        }
        return start;
    }

    static int end(int start, int maxEntries, int size) {
        return maxEntries == 0 ? size : Math.min(size, start + maxEntries);
    }
}
