/* The AXIR lexer: turns len bytes of text (not NUL-terminated) into tokens, one at a time, for axir_parse.c.
 * Inside dimensions ('[' ... ']') '%' is the modulo operator; elsewhere it starts a value name (%x, %0). The parser
 * says which by setting dim_mode before it asks for the next token. */
#ifndef AXON_AXIR_LEX_H
#define AXON_AXIR_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum axir_tok_kind {
    AXIR_T_EOF = 0,
    AXIR_T_ERROR,        /* message in the lexer's err */
    AXIR_T_NAME,         /* keywords, op names, dtypes, symbols, attribute names, inf/nan/true/false */
    AXIR_T_VALUE,        /* %name; text/len exclude the '%' */
    AXIR_T_GLOBAL,       /* @name; text/len exclude the '@' */
    AXIR_T_INT,          /* unsigned digits; magnitude in u (at most 2^63, so that -2^63 reads) */
    AXIR_T_FLOAT,        /* unsigned; value in f */
    AXIR_T_STRING,       /* text/len: the raw bytes between the quotes, escapes not yet decoded */
    AXIR_T_LPAREN, AXIR_T_RPAREN, AXIR_T_LBRACE, AXIR_T_RBRACE, AXIR_T_LBRACK, AXIR_T_RBRACK,
    AXIR_T_COMMA, AXIR_T_COLON, AXIR_T_EQ, AXIR_T_ARROW,
    AXIR_T_PLUS, AXIR_T_MINUS, AXIR_T_STAR, AXIR_T_SLASH2, AXIR_T_PERCENT
} axir_tok_kind_t;

typedef struct axir_token {
    axir_tok_kind_t kind;
    const char *text;
    size_t len;
    int line, col;
    uint64_t u;
    double f;
} axir_token_t;

typedef struct axir_lexer {
    const char *src;
    size_t len, pos;
    int line;
    size_t line_start;
    int dim_mode;
    char err[160];
} axir_lexer_t;

void axir_lex_init(axir_lexer_t *lx, const char *src, size_t len);
/* The next token. Never reads past len. */
axir_token_t axir_lex_next(axir_lexer_t *lx);
/* Printable description of a token for messages ("'foo'", "end of input"). */
const char *axir_tok_describe(const axir_token_t *t, char *buf, size_t size);

#endif
