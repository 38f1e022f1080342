/* SPDX-License-Identifier: MIT */
#include <stdarg.h>

#include "output.h"
#include "table.h"

struct Table {
        size_t n_columns;
        char **headers;
        bool *right;
        char **cells; /* row-major */
        size_t n_cells;
        size_t n_allocated;
};

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; t->headers && i < t->n_columns; i++)
                free(t->headers[i]);
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->headers);
        free(t->right);
        free(t->cells);
        free(t);
        return NULL;
}

int table_new(size_t n_columns, const char *const *headers, Table **ret) {
        _cleanup_(table_freep) Table *t = NULL;

        if (n_columns == 0 || !headers || !ret)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->n_columns = n_columns;
        t->headers = calloc(n_columns, sizeof(char *));
        t->right = calloc(n_columns, sizeof(bool));
        if (!t->headers || !t->right)
                return -ENOMEM;
        for (size_t i = 0; i < n_columns; i++) {
                t->headers[i] = strdup(headers[i]);
                if (!t->headers[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

int table_set_align_right(Table *t, size_t column, bool right) {
        if (!t || column >= t->n_columns)
                return -EINVAL;
        t->right[column] = right;
        return 0;
}

static int table_add_owned(Table *t, char *s) {
        if (!s)
                return -ENOMEM;
        if (t->n_cells == t->n_allocated) {
                size_t n = MAX(t->n_allocated * 2, (size_t) 16);
                char **c = reallocarray(t->cells, n, sizeof(char *));

                if (!c) {
                        free(s);
                        return -ENOMEM;
                }
                t->cells = c;
                t->n_allocated = n;
        }
        t->cells[t->n_cells++] = s;
        return 0;
}

int table_add_cell(Table *t, const char *s) {
        if (!t)
                return -EINVAL;
        return table_add_owned(t, strdup(s && *s ? s : "-"));
}

int table_add_cellf(Table *t, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        int r;

        if (!t)
                return -EINVAL;
        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return table_add_owned(t, s);
}

size_t table_rows(const Table *t) {
        return t ? t->n_cells / t->n_columns : 0;
}

/* Display width: UTF-8 code points (every cell steerctl prints is narrow),
 * not counting ANSI CSI sequences (ESC [ ... final byte). */
static size_t text_width(const char *s) {
        size_t w = 0;

        while (*s) {
                if (s[0] == '\x1b' && s[1] == '[') {
                        s += 2;
                        while (*s && !(*s >= 0x40 && *s <= 0x7e))
                                s++;
                        if (*s)
                                s++;
                        continue;
                }
                if (((unsigned char) *s & 0xc0) != 0x80)
                        w++;
                s++;
        }
        return w;
}

static void print_cell(FILE *f, const char *s, size_t width, bool right, bool last) {
        size_t w = text_width(s), pad = width > w ? width - w : 0;

        if (right)
                fprintf(f, "%*s", (int) pad, "");
        fputs(s, f);
        if (!right && !last)
                fprintf(f, "%*s", (int) pad, "");
}

static void print_row(const Table *t, FILE *f, char *const *row, const size_t *widths) {
        for (size_t c = 0; c < t->n_columns; c++) {
                if (c > 0)
                        fputc(' ', f);
                print_cell(f, row[c], widths[c], t->right[c], c + 1 == t->n_columns);
        }
}

int table_print(const Table *t, FILE *f, bool header) {
        _cleanup_(freep) size_t *widths = NULL;
        size_t rows;

        if (!t || !f)
                return -EINVAL;
        if (t->n_cells % t->n_columns != 0)
                return -EINVAL; /* an incomplete row: a bug of the caller */
        rows = t->n_cells / t->n_columns;

        widths = calloc(t->n_columns, sizeof(size_t));
        if (!widths)
                return -ENOMEM;
        for (size_t c = 0; c < t->n_columns; c++) {
                if (header)
                        widths[c] = text_width(t->headers[c]);
                for (size_t r = 0; r < rows; r++)
                        widths[c] = MAX(widths[c], text_width(t->cells[r * t->n_columns + c]));
        }

        if (header) {
                /* The header is underlined as a whole, padding included, as systemd does. */
                fputs(ansi(ANSI_UNDERLINE), f);
                for (size_t c = 0; c < t->n_columns; c++) {
                        if (c > 0)
                                fputc(' ', f);
                        print_cell(f, t->headers[c], widths[c], t->right[c],
                                   c + 1 == t->n_columns && !colors_enabled());
                }
                fputs(ansi(ANSI_NORMAL), f);
                fputc('\n', f);
        }
        for (size_t r = 0; r < rows; r++) {
                print_row(t, f, t->cells + r * t->n_columns, widths);
                fputc('\n', f);
        }
        return ferror(f) ? -EIO : 0;
}
