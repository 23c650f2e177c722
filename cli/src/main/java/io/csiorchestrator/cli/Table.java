package io.csiorchestrator.cli;

import java.util.ArrayList;
import java.util.List;

/** A plain-text table: header row, columns padded to their widest cell, two spaces apart. */
public final class Table {

    private final List<String> header;
    private final List<List<String>> rows = new ArrayList<>();

    public Table(String... header) {
        this.header = List.of(header);
    }

    public Table row(Object... cells) {
        if (cells.length != header.size()) {
            throw new IllegalArgumentException("expected " + header.size() + " cells, got " + cells.length);
        }
        List<String> row = new ArrayList<>();
        for (Object cell : cells) {
            row.add(cell == null ? "-" : String.valueOf(cell).replace('\n', ' '));
        }
        rows.add(row);
        return this;
    }

    public int size() {
        return rows.size();
    }

    public String render() {
        int[] widths = new int[header.size()];
        for (int c = 0; c < widths.length; c++) {
            widths[c] = header.get(c).length();
            for (List<String> row : rows) {
                widths[c] = Math.max(widths[c], row.get(c).length());
            }
        }
        StringBuilder out = new StringBuilder();
        line(out, header, widths);
        for (List<String> row : rows) {
            line(out, row, widths);
        }
        return out.toString();
    }

    private static void line(StringBuilder out, List<String> cells, int[] widths) {
        StringBuilder line = new StringBuilder();
        for (int c = 0; c < cells.size(); c++) {
            if (c > 0) {
                line.append("  ");
            }
            line.append(cells.get(c));
            if (c < cells.size() - 1) {
                line.append(" ".repeat(widths[c] - cells.get(c).length()));
            }
        }
        out.append(line.toString().stripTrailing()).append('\n');
    }

    /** Key/value lines, keys padded: for one object's details. */
    public static String keyValues(List<String[]> pairs) {
        int width = 0;
        for (String[] pair : pairs) {
            width = Math.max(width, pair[0].length());
        }
        StringBuilder out = new StringBuilder();
        for (String[] pair : pairs) {
            out.append(pair[0]).append(" ".repeat(width - pair[0].length())).append(" = ")
                    .append(pair[1] == null ? "-" : pair[1]).append('\n');
        }
        return out.toString();
    }
}
