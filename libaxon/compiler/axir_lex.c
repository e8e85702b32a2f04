/* The AXIR lexer (see axir_lex.h). Every read is bounded by len: the text comes from front ends, files and the
 * fuzzer, and need not end in NUL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axir_impl.h"
#include "axir_lex.h"

void axir_lex_init(axir_lexer_t *lx, const char *src, size_t len) {
    memset(lx, 0, sizeof *lx);
    lx->src = src;
    lx->len = src ? len : 0;
    lx->line = 1;
}

static int peek(const axir_lexer_t *lx, size_t ahead) {
    return lx->pos + ahead < lx->len ? (unsigned char)lx->src[lx->pos + ahead] : -1;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_name_char(int c) { return is_name_start(c) || is_digit(c) || c == '.'; }

static axir_token_t error_tok(axir_lexer_t *lx, axir_token_t t, const char *fmt, const char *arg) {
    snprintf(lx->err, sizeof lx->err, fmt, arg);
    t.kind = AXIR_T_ERROR;
    return t;
}

static void skip_space(axir_lexer_t *lx) {
    for (;;) {
        int c = peek(lx, 0);
        if (c == '\n') {
            lx->pos++;
            lx->line++;
            lx->line_start = lx->pos;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            lx->pos++;
        } else if (c == '#') {
            while (peek(lx, 0) != -1 && peek(lx, 0) != '\n') lx->pos++;
        } else {
            return;
        }
    }
}

/* A name after a sigil (% or @), which may start with a digit. */
static axir_token_t lex_sigil_name(axir_lexer_t *lx, axir_token_t t, axir_tok_kind_t kind, const char *what) {
    lx->pos++;   /* the sigil */
    size_t start = lx->pos;
    while (is_name_char(peek(lx, 0))) lx->pos++;
    t.text = lx->src + start;
    t.len = lx->pos - start;
    if (t.len == 0) return error_tok(lx, t, "expected a name after '%s'", what);
    if (t.len > AXIR_MAX_NAME) return error_tok(lx, t, "name after '%s' is longer than 256 bytes", what);
    t.kind = kind;
    return t;
}

static axir_token_t lex_number(axir_lexer_t *lx, axir_token_t t) {
    size_t start = lx->pos;
    uint64_t u = 0;
    int overflow = 0;
    while (is_digit(peek(lx, 0))) {
        unsigned d = (unsigned)(peek(lx, 0) - '0');
        if (u > (UINT64_C(1) << 63) / 10 || (u == (UINT64_C(1) << 63) / 10 && d > 8) ) overflow = 1;
        else u = u * 10 + d;
        lx->pos++;
    }
    int is_float = 0;
    if (peek(lx, 0) == '.') {
        if (!is_digit(peek(lx, 1))) {
            t.text = lx->src + start;
            t.len = lx->pos + 1 - start;
            return error_tok(lx, t, "expected digits after '.'%s", "");
        }
        lx->pos++;
        while (is_digit(peek(lx, 0))) lx->pos++;
        is_float = 1;
    }
    int e = peek(lx, 0);
    if (e == 'e' || e == 'E') {
        size_t k = 1;
        if (peek(lx, k) == '+' || peek(lx, k) == '-') k++;
        if (is_digit(peek(lx, k))) {
            lx->pos += k;
            while (is_digit(peek(lx, 0))) lx->pos++;
            is_float = 1;
        }
    }
    t.text = lx->src + start;
    t.len = lx->pos - start;
    if (is_float) {
        char buf[128];
        if (t.len >= sizeof buf) return error_tok(lx, t, "number longer than 127 characters%s", "");
        memcpy(buf, t.text, t.len);
        buf[t.len] = '\0';
        t.f = strtod(buf, NULL);
        t.kind = AXIR_T_FLOAT;
        return t;
    }
    if (overflow) return error_tok(lx, t, "integer does not fit in int64%s", "");
    t.u = u;
    t.kind = AXIR_T_INT;
    return t;
}

static axir_token_t lex_string(axir_lexer_t *lx, axir_token_t t) {
    lx->pos++;   /* the opening quote */
    size_t start = lx->pos;
    for (;;) {
        int c = peek(lx, 0);
        if (c == -1 || c == '\n') return error_tok(lx, t, "unterminated string%s", "");
        if (c == '\0') return error_tok(lx, t, "NUL byte in a string%s", "");
        if (c == '"') break;
        if (c == '\\') {
            int n = peek(lx, 1);
            if (n != '"' && n != '\\' && n != 'n' && n != 't')
                return error_tok(lx, t, "unknown escape in a string (only \\\" \\\\ \\n \\t)%s", "");
            lx->pos++;
        }
        lx->pos++;
        if (lx->pos - start > AXIR_MAX_STRING) return error_tok(lx, t, "string longer than 4096 bytes%s", "");
    }
    t.text = lx->src + start;
    t.len = lx->pos - start;
    lx->pos++;   /* the closing quote */
    t.kind = AXIR_T_STRING;
    return t;
}

axir_token_t axir_lex_next(axir_lexer_t *lx) {
    skip_space(lx);
    axir_token_t t;
    memset(&t, 0, sizeof t);
    t.line = lx->line;
    t.col = (int)(lx->pos - lx->line_start) + 1;
    t.text = lx->src + lx->pos;
    int c = peek(lx, 0);
    if (c == -1) {
        t.kind = AXIR_T_EOF;
        return t;
    }
    if (is_name_start(c)) {
        size_t start = lx->pos;
        while (is_name_char(peek(lx, 0))) lx->pos++;
        t.len = lx->pos - start;
        if (t.len > AXIR_MAX_NAME) return error_tok(lx, t, "name longer than 256 bytes%s", "");
        t.kind = AXIR_T_NAME;
        return t;
    }
    if (is_digit(c)) return lex_number(lx, t);
    if (c == '"') return lex_string(lx, t);
    if (c == '%' && !lx->dim_mode) return lex_sigil_name(lx, t, AXIR_T_VALUE, "%");
    if (c == '@') return lex_sigil_name(lx, t, AXIR_T_GLOBAL, "@");
    t.len = 1;
    lx->pos++;
    switch (c) {
    case '(': t.kind = AXIR_T_LPAREN; return t;
    case ')': t.kind = AXIR_T_RPAREN; return t;
    case '{': t.kind = AXIR_T_LBRACE; return t;
    case '}': t.kind = AXIR_T_RBRACE; return t;
    case '[': t.kind = AXIR_T_LBRACK; return t;
    case ']': t.kind = AXIR_T_RBRACK; return t;
    case ',': t.kind = AXIR_T_COMMA; return t;
    case ':': t.kind = AXIR_T_COLON; return t;
    case '=': t.kind = AXIR_T_EQ; return t;
    case '+': t.kind = AXIR_T_PLUS; return t;
    case '*': t.kind = AXIR_T_STAR; return t;
    case '%': t.kind = AXIR_T_PERCENT; return t;
    case '-':
        if (peek(lx, 0) == '>') {
            lx->pos++;
            t.len = 2;
            t.kind = AXIR_T_ARROW;
            return t;
        }
        t.kind = AXIR_T_MINUS;
        return t;
    case '/':
        if (peek(lx, 0) == '/') {
            lx->pos++;
            t.len = 2;
            t.kind = AXIR_T_SLASH2;
            return t;
        }
        return error_tok(lx, t, "'/' must be '//' (floor division)%s", "");
    default: break;
    }
    char what[16];
    if (c >= 0x20 && c < 0x7f) snprintf(what, sizeof what, "'%c'", c);
    else snprintf(what, sizeof what, "byte 0x%02x", (unsigned)c);
    return error_tok(lx, t, "unexpected character %s", what);
}

const char *axir_tok_describe(const axir_token_t *t, char *buf, size_t size) {
    switch (t->kind) {
    case AXIR_T_EOF: snprintf(buf, size, "end of input"); break;
    case AXIR_T_VALUE: snprintf(buf, size, "'%%%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
    case AXIR_T_GLOBAL: snprintf(buf, size, "'@%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
    case AXIR_T_STRING: snprintf(buf, size, "a string"); break;
    default: snprintf(buf, size, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); break;
    }
    return buf;
}
