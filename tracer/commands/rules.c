/* Rule file parser (see rules.h; the grammar is tracer/RULES.md's). */
#include "rules.h"

#include "amp.h"
#include "analyze.h"
#include "edit_distance.h"
#include "findings.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const policy_names[] = {
	"none", "lower_precision_fp", "fp32", "fp32_set_opt_dtype",
	"fp32_append_dtype", "promote", "banned", NULL
};
#define PHASE_WORDS "forward", "backward", "optimizer", "other", "any"
static const char *const phase_names[] = { PHASE_WORDS, NULL };
static const char *const device_names[] = { "cpu", "cuda", NULL };
static const char *const cache_names[] = { "hit", "miss", "uncacheable",
					   "disabled", "any", NULL };
static const char *const origin_names[] = { "autocast", "autograd",
					    "custom_fwd", "compiled", "any",
					    NULL };
static const char *const cache_metrics[] = { "hit-rate", "hits", "misses",
					     "uncacheable", "disabled",
					     "clears", NULL };
static const char *const scaler_metrics[] = { "skipped-steps", "steps",
					      "scale-min", "scale-max",
					      "scale-final", NULL };
static const char *const ops_metrics[] = { "total", NULL };
static const char *const rule_starts[] = { "op", "module", "ops", "casts", "cache",
					   "scaler", "no", "finding", NULL };
/* The words that may follow others, for "did you mean". */
static const char *const in_words[] = { "scope", "module", "phase",
					PHASE_WORDS, NULL };
static const char *const check_words[] = { "output", "inputs", "policy",
					   "count", NULL };
static const char *const no_words[] = { "finding", "findings", "casts",
					NULL };
static const char *const direction_words[] = { "total", "to", "from", NULL };

enum token_kind { TOKEN_END, TOKEN_WORD, TOKEN_STRING, TOKEN_NUMBER,
		  TOKEN_SYMBOL };

struct token {
	enum token_kind kind;
	char text[256];
	double number;
	size_t col;
};

struct parser {
	const char *path;
	const char *line;    /* current line, NUL-terminated copy */
	size_t lineno;
	size_t pos;
	struct token tok;
	struct trace_error *err;
	bool failed;
};

/* ------------------------------------------------------------- lexing */

/* The length of the decimal number at s: digits, a fraction, an
 * exponent.  Not strtod's grammar, which also reads 0x10 and inf. */
static size_t decimal_length(const char *s)
{
	size_t n = 0;

	while (isdigit((unsigned char)s[n]))
		n++;
	if (s[n] == '.' && isdigit((unsigned char)s[n + 1]))
		for (n++; isdigit((unsigned char)s[n]); n++)
			;
	if (s[n] == 'e' || s[n] == 'E') {
		size_t sign = s[n + 1] == '+' || s[n + 1] == '-';
		if (isdigit((unsigned char)s[n + 1 + sign]))
			for (n += 1 + sign; isdigit((unsigned char)s[n]); n++)
				;
	}
	return n;
}

static bool word_start(char c)
{
	return isalpha((unsigned char)c) || c == '_' || c == '*' || c == '?' ||
	       c == '[';
}

static bool word_char(const char *s)
{
	char c = *s;

	if (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '*' ||
	    c == '?' || c == '[' || c == ']')
		return true;
	if (c == '-')
		return s[1] != '>';
	return c == ':' && s[1] == ':';
}

static int lex_error(struct parser *p, size_t col, const char *what)
{
	p->failed = true;
	return trace_error_set(p->err, "%s:%zu:%zu: %s", p->path, p->lineno,
			       col, what);
}

static int next(struct parser *p)
{
	const char *s = p->line;
	struct token *t = &p->tok;

	while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\r')
		p->pos++;
	t->col = p->pos + 1;
	t->text[0] = '\0';
	char c = s[p->pos];
	if (!c || c == '#') {
		t->kind = TOKEN_END;
		return 0;
	}
	if (c == '"') {
		size_t n = 0;
		p->pos++;
		for (;;) {
			char d = s[p->pos];
			if (!d)
				return lex_error(p, t->col, "unterminated string "
						 "(a closing \" is missing)");
			p->pos++;
			if (d == '"')
				break;
			if (d == '\\' && s[p->pos])
				d = s[p->pos++];
			if (n + 1 < sizeof t->text)
				t->text[n++] = d;
		}
		t->text[n] = '\0';
		t->kind = TOKEN_STRING;
		return 0;
	}
	if (isdigit((unsigned char)c) ||
	    (c == '.' && isdigit((unsigned char)s[p->pos + 1]))) {
		size_t n = decimal_length(s + p->pos);
		const char *end = s + p->pos + n;
		if ((word_char(end) && *end != '.') || n >= sizeof t->text)
			return lex_error(p, t->col, "malformed number (a "
					 "decimal: 12, 0.5, 1e-3)");
		snprintf(t->text, sizeof t->text, "%.*s", (int)n, s + p->pos);
		t->number = strtod(t->text, NULL);
		if (isinf(t->number))
			return lex_error(p, t->col, "number out of range");
		p->pos += n;
		t->kind = TOKEN_NUMBER;
		return 0;
	}
	if (word_start(c)) {
		size_t n = 0;
		while (s[p->pos] && word_char(s + p->pos)) {
			if (s[p->pos] == ':') { /* "::" */
				if (n + 2 < sizeof t->text) {
					t->text[n++] = ':';
					t->text[n++] = ':';
				}
				p->pos += 2;
				continue;
			}
			if (n + 1 < sizeof t->text)
				t->text[n++] = s[p->pos];
			p->pos++;
		}
		t->text[n] = '\0';
		t->kind = TOKEN_WORD;
		return 0;
	}
	/* "=>" and "=<" are lexed whole so the error names them */
	static const char *const symbols[] = { "->", "<=", ">=", "==", "!=",
					       "=>", "=<", "<", ">", "=", ":",
					       ",", "|", NULL };
	for (int i = 0; symbols[i]; i++) {
		size_t n = strlen(symbols[i]);
		if (!strncmp(s + p->pos, symbols[i], n)) {
			snprintf(t->text, sizeof t->text, "%s", symbols[i]);
			p->pos += n;
			t->kind = TOKEN_SYMBOL;
			return 0;
		}
	}
	char what[64];
	if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
		snprintf(what, sizeof what, "unexpected character '%c'", c);
	else
		snprintf(what, sizeof what, "unexpected byte 0x%02x",
			 (unsigned char)c);
	return lex_error(p, t->col, what);
}

/* ------------------------------------------------------------ parsing */

static void describe_token(const struct token *t, char *buf, size_t size)
{
	switch (t->kind) {
	case TOKEN_END:
		snprintf(buf, size, "the end of the line");
		break;
	case TOKEN_STRING:
		snprintf(buf, size, "\"%s\"", t->text);
		break;
	default:
		snprintf(buf, size, "'%s'", t->text);
	}
}

static int expected(struct parser *p, const char *what)
{
	char got[300];

	if (p->failed)
		return -1;
	describe_token(&p->tok, got, sizeof got);
	p->failed = true;
	return trace_error_set(p->err, "%s:%zu:%zu: expected %s, got %s", p->path,
			       p->lineno, p->tok.col, what, got);
}

/* expected(), with "; did you mean 'NAME'?" when the word (or symbol)
 * written is a typo of one of `names`, the words that may stand there:
 * 'outptu' is 'output', '=>' is '>='. */
static int expected_one_of(struct parser *p, const char *what,
			   const char *const *names)
{
	if (p->failed)
		return -1;
	int status = expected(p, what);
	const char *close = NULL;
	if (p->tok.kind == TOKEN_WORD || p->tok.kind == TOKEN_SYMBOL)
		close = closest_name_among(p->tok.text, names);
	if (close && p->err) {
		size_t n = strlen(p->err->message);
		snprintf(p->err->message + n, sizeof p->err->message - n,
			 "; did you mean '%s'?", close);
	}
	return status;
}

static void list_names(const char *const *names, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; names[i] && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? " " : "",
				      names[i]);
}

static bool is_word(const struct parser *p, const char *word)
{
	return p->tok.kind == TOKEN_WORD && !strcmp(p->tok.text, word);
}

static bool is_symbol(const struct parser *p, const char *symbol)
{
	return p->tok.kind == TOKEN_SYMBOL && !strcmp(p->tok.text, symbol);
}

static int expect_word(struct parser *p, const char *word)
{
	char what[64];

	if (!is_word(p, word)) {
		snprintf(what, sizeof what, "'%s'", word);
		return expected(p, what);
	}
	return next(p);
}

/* One of `names`; returns the static name. */
static const char *expect_name(struct parser *p, const char *const *names,
			       const char *what)
{
	char buf[400], list[300];
	const char *word = p->tok.text;
	enum amp_dtype dtype;

	/* dtypes in any spelling of lib's alias table (fp16, torch.half) */
	if (names == trace_dtype_names && amp_dtype_from_name(word, &dtype) == 0)
		word = amp_dtype_name(dtype);
	if (p->tok.kind == TOKEN_WORD)
		for (int i = 0; names[i]; i++)
			if (!strcmp(word, names[i])) {
				next(p);
				return p->failed ? NULL : names[i];
			}
	list_names(names, list, sizeof list);
	snprintf(buf, sizeof buf, "%s (%s)", what, list);
	expected_one_of(p, buf, names);
	return NULL;
}

static int expect_cmp(struct parser *p, enum rule_cmp *cmp, double *number)
{
	static const char *const texts[] = { "<=", "<", ">=", ">", "==", "!=",
					      "=", NULL };
	static const enum rule_cmp values[] = { CMP_LE, CMP_LT, CMP_GE, CMP_GT,
						CMP_EQ, CMP_NE, CMP_EQ };
	int found = -1;

	for (int i = 0; i < 7 && p->tok.kind == TOKEN_SYMBOL; i++)
		if (!strcmp(p->tok.text, texts[i]))
			found = i;
	if (found < 0)
		return expected_one_of(p, "a comparison (<= < >= > == !=)",
				       texts);
	*cmp = values[found];
	if (next(p) != 0)
		return -1;
	if (p->tok.kind != TOKEN_NUMBER)
		return expected(p, "a number");
	*number = p->tok.number;
	return next(p);
}

static char *expect_pattern(struct parser *p, const char *what)
{
	if (p->tok.kind != TOKEN_WORD && p->tok.kind != TOKEN_STRING) {
		expected(p, what);
		return NULL;
	}
	char *copy = strdup(p->tok.text);
	next(p);
	return copy;
}

/* Filters shared by op and casts rules. */
static int parse_filters(struct parser *p, struct rule *r, bool casts)
{
	struct rule_filter *f = &r->filter;

	f->autocast = -1;
	for (;;) {
		if (is_word(p, "in")) {
			next(p);
			if (is_word(p, "scope")) {
				next(p);
				free(f->scope);
				f->scope = expect_pattern(p, "a scope name");
			} else if (is_word(p, "module")) {
				next(p);
				free(f->module);
				f->module = expect_pattern(p, "a module path "
							   "(e.g. h.*.attn)");
			} else if (is_word(p, "phase")) {
				next(p);
				f->phase = expect_name(p, phase_names, "a phase");
			} else if (is_word(p, "forward") || is_word(p, "backward") ||
				   is_word(p, "optimizer") || is_word(p, "other") ||
				   is_word(p, "any")) {
				f->phase = expect_name(p, phase_names, "a phase");
			} else {
				return expected_one_of(p, "'scope', 'module', "
						       "'phase', 'forward', "
						       "'backward', 'optimizer', "
						       "'other' or 'any' after "
						       "'in'", in_words);
			}
		} else if (is_word(p, "on")) {
			next(p);
			f->device = expect_name(p, device_names, "a device");
		} else if (is_word(p, "under") || is_word(p, "outside")) {
			f->autocast = is_word(p, "under");
			next(p);
			if (expect_word(p, "autocast") != 0)
				return -1;
		} else if (casts && is_word(p, "for")) {
			next(p);
			if (expect_word(p, "op") != 0)
				return -1;
			free(f->op);
			f->op = expect_pattern(p, "an op name");
		} else if (casts && is_word(p, "cache")) {
			next(p);
			f->cache = expect_name(p, cache_names, "a cache result");
		} else if (casts && is_word(p, "origin")) {
			next(p);
			f->origin = expect_name(p, origin_names, "a cast origin");
		} else {
			return 0;
		}
		if (p->failed)
			return -1;
	}
}

static int parse_values(struct parser *p, struct op_check *c,
			const char *const *names, const char *what)
{
	do {
		if (c->nvalues && next(p) != 0)
			return -1;
		const char *v = expect_name(p, names, what);
		if (!v)
			return -1;
		if (c->nvalues < RULE_MAX_VALUES)
			c->values[c->nvalues++] = v;
	} while (is_symbol(p, "|"));
	return 0;
}

static int parse_op_checks(struct parser *p, struct rule *r);

static int parse_op_rule(struct parser *p, struct rule *r)
{
	r->kind = RULE_OP;
	r->op = expect_pattern(p, "an op name (e.g. linear, softmax.int, mm*)");
	if (!r->op || parse_filters(p, r, false) != 0)
		return -1;
	return parse_op_checks(p, r);
}

/* "module PATH ...: checks" is "op * in module PATH ...: checks". */
static int parse_module_rule(struct parser *p, struct rule *r)
{
	r->kind = RULE_OP;
	r->filter.module = expect_pattern(p, "a module path (e.g. h.*.attn, "
					  "lm_head)");
	if (!r->filter.module)
		return -1;
	r->op = strdup("*");
	if (!r->op)
		return trace_error_set(p->err, "%s: out of memory", p->path);
	if (parse_filters(p, r, false) != 0)
		return -1;
	return parse_op_checks(p, r);
}

/* ":" and the checks of an op rule. */
static int parse_op_checks(struct parser *p, struct rule *r)
{
	if (!is_symbol(p, ":"))
		return expected(p, "':' (or a filter: in scope NAME, in module "
				"PATH, in phase PHASE, on DEVICE, under "
				"autocast, outside autocast)");
	do {
		if (next(p) != 0)
			return -1;
		if (r->nchecks == RULE_MAX_CHECKS)
			return expected(p, "at most 8 checks");
		/* as many as written: a rules file may hold many rules */
		struct op_check *grown =
			realloc(r->checks, (size_t)(r->nchecks + 1) *
						   sizeof *grown);
		if (!grown)
			return trace_error_set(p->err, "%s: out of memory",
					       p->path);
		r->checks = grown;
		struct op_check *c = &r->checks[r->nchecks++];
		*c = (struct op_check){ 0 };
		if (is_word(p, "output")) {
			c->kind = CHECK_OUTPUT;
			next(p);
			if (parse_values(p, c, trace_dtype_names, "a dtype") != 0)
				return -1;
		} else if (is_word(p, "inputs")) {
			c->kind = CHECK_INPUTS;
			next(p);
			if (parse_values(p, c, trace_dtype_names, "a dtype") != 0)
				return -1;
		} else if (is_word(p, "policy")) {
			c->kind = CHECK_POLICY;
			next(p);
			if (parse_values(p, c, policy_names, "a policy") != 0)
				return -1;
		} else if (is_word(p, "count")) {
			c->kind = CHECK_COUNT;
			next(p);
			if (expect_cmp(p, &c->cmp, &c->number) != 0)
				return -1;
		} else {
			return expected_one_of(p, "a check (output DTYPE, inputs "
					       "DTYPE, policy POLICY, count CMP "
					       "N)", check_words);
		}
	} while (is_symbol(p, ","));
	return 0;
}

static int parse_casts_rule(struct parser *p, struct rule *r, bool no)
{
	enum amp_dtype dtype;

	r->kind = RULE_CASTS;
	if (is_word(p, "total")) {
		next(p);
	} else if (is_word(p, "to")) {
		next(p);
		r->to = expect_name(p, trace_dtype_names, "a dtype");
	} else if (is_word(p, "from")) {
		next(p);
		r->from = expect_name(p, trace_dtype_names, "a dtype");
	} else if (p->tok.kind == TOKEN_WORD &&
		   amp_dtype_from_name(p->tok.text, &dtype) != 0 &&
		   closest_name_among(p->tok.text, direction_words)) {
		return expected_one_of(p, "a cast direction (DTYPE->DTYPE, "
				       "total, to DTYPE, from DTYPE)",
				       direction_words);
	} else if (p->tok.kind == TOKEN_WORD) {
		r->from = expect_name(p, trace_dtype_names,
				      "a cast direction (DTYPE->DTYPE, total, "
				      "to DTYPE, from DTYPE) starting with a "
				      "dtype");
		if (!r->from)
			return -1;
		if (!is_symbol(p, "->"))
			return expected(p, "'->' (as in f32->f16)");
		next(p);
		r->to = expect_name(p, trace_dtype_names, "a dtype");
	} else {
		return expected(p, "a cast direction (DTYPE->DTYPE, total, to "
				"DTYPE, from DTYPE)");
	}
	if (p->failed || parse_filters(p, r, true) != 0)
		return -1;
	if (no) {
		r->cmp = CMP_EQ;
		r->number = 0;
	} else if (expect_cmp(p, &r->cmp, &r->number) != 0) {
		return -1;
	}
	if (is_word(p, "per")) {
		next(p);
		if (expect_word(p, "step") != 0)
			return -1;
		r->per_step = true;
	}
	return 0;
}

/* Appends "; did you mean 'KIND'?" to the error when a kind is a typo
 * away from the word written (closest_name_is_typo, as every "did you
 * mean"). */
static void suggest_kind(struct parser *p)
{
	struct closest_name close = CLOSEST_NAME_INIT;

	if (!p->err || p->tok.kind != TOKEN_WORD)
		return;
	for (const struct finding_kind *k = finding_kinds;
	     k < finding_kinds + FINDING_KIND_COUNT; k++)
		if (!k->note)
			closest_name_offer(&close, p->tok.text, k->name);
	if (!close.name || !closest_name_is_typo(p->tok.text, close.distance))
		return;
	size_t n = strlen(p->err->message);
	snprintf(p->err->message + n, sizeof p->err->message - n,
		 "; did you mean '%s'?", close.name);
}

/* Every kind of the findings engine, written like the names of the
 * table (dashes and all), is a word; other kinds must be quoted, so a
 * typo is caught here and not as a rule that silently never fails. */
static int parse_finding_kind(struct parser *p, struct rule *r)
{
	char what[800];
	size_t n = 0;

	if (p->failed)
		return -1;
	const struct finding_kind *known =
		p->tok.kind == TOKEN_STRING || p->tok.kind == TOKEN_WORD
			? finding_kind_lookup(p->tok.text) : NULL;
	/* a note (fsdp-mixed-precision) is never a finding: a rule on it
	 * would pass or fail whatever the trace holds */
	if (known && known->note)
		return expected(p, "a finding kind (that one is a note the "
				"PyTorch bridge writes, never a finding)");
	if (p->tok.kind == TOKEN_STRING || known) {
		r->finding = strdup(p->tok.text);
		return next(p);
	}
	n += (size_t)snprintf(what, sizeof what, "a finding kind");
	for (const struct finding_kind *k = finding_kinds;
	     k < finding_kinds + FINDING_KIND_COUNT; k++)
		if (!k->note)
			n += (size_t)snprintf(what + n, sizeof what - n, "%s%s",
					      k == finding_kinds ? " (" : " ",
					      k->name);
	snprintf(what + n, sizeof what - n, "; quote other kinds: \"my-kind\")");
	int status = expected(p, what);
	suggest_kind(p);
	return status;
}

static int parse_rule(struct parser *p, struct rule *r)
{
	if (is_word(p, "op")) {
		next(p);
		return parse_op_rule(p, r);
	}
	if (is_word(p, "casts")) {
		next(p);
		return parse_casts_rule(p, r, false);
	}
	if (is_word(p, "module")) {
		next(p);
		return parse_module_rule(p, r);
	}
	if (is_word(p, "cache")) {
		next(p);
		r->kind = RULE_CACHE;
		r->metric = expect_name(p, cache_metrics, "a cache metric");
		if (!r->metric)
			return -1;
		return expect_cmp(p, &r->cmp, &r->number);
	}
	if (is_word(p, "scaler")) {
		next(p);
		r->kind = RULE_SCALER;
		r->metric = expect_name(p, scaler_metrics, "a scaler metric");
		if (!r->metric)
			return -1;
		return expect_cmp(p, &r->cmp, &r->number);
	}
	if (is_word(p, "ops")) {
		next(p);
		r->kind = RULE_OPS;
		r->metric = expect_name(p, ops_metrics, "an ops metric");
		if (!r->metric)
			return -1;
		return expect_cmp(p, &r->cmp, &r->number);
	}
	if (is_word(p, "finding")) {
		next(p);
		r->kind = RULE_FINDING;
		if (parse_finding_kind(p, r) != 0)
			return -1;
		return expect_cmp(p, &r->cmp, &r->number);
	}
	if (is_word(p, "no")) {
		next(p);
		if (is_word(p, "casts")) {
			next(p);
			return parse_casts_rule(p, r, true);
		}
		r->kind = RULE_FINDING;
		r->cmp = CMP_EQ;
		r->number = 0;
		if (is_word(p, "findings"))
			return next(p);
		if (!is_word(p, "finding"))
			return expected_one_of(p, "'finding', 'findings' or "
					       "'casts' after 'no'", no_words);
		next(p);
		return parse_finding_kind(p, r);
	}
	char list[200], what[300];
	list_names(rule_starts, list, sizeof list);
	snprintf(what, sizeof what, "a rule starting with one of: %s", list);
	return expected_one_of(p, what, rule_starts);
}

static void rule_free(struct rule *r)
{
	free(r->checks);
	free(r->text);
	free(r->op);
	free(r->filter.scope);
	free(r->filter.module);
	free(r->filter.op);
	free(r->finding);
}

/* rules->items with room for one more rule (doubling: a file may hold
 * many), or NULL. */
static struct rule *room_for_one_more(struct rules *rules, size_t *cap)
{
	if (rules->count < *cap)
		return rules->items;
	size_t more = *cap ? *cap * 2 : 16;
	struct rule *grown = realloc(rules->items, more * sizeof *grown);
	if (grown)
		*cap = more;
	return grown;
}

int rules_parse(const char *path, const char *text, size_t len,
		struct rules *rules, struct trace_error *err)
{
	struct parser p = { .path = path, .err = err };
	size_t start = 0, cap = 0;

	*rules = (struct rules){ .path = strdup(path) };
	if (memchr(text, '\0', len)) {
		rules_free(rules);
		return trace_error_set(err, "%s: binary data (a NUL byte) in a "
				       "rules file", path);
	}
	/* A UTF-8 byte order mark, as some editors write, is no rule. */
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		start = 3;
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - text) : len;
		char *line = strndup(text + start, end - start);
		if (!line) {
			rules_free(rules);
			return trace_error_set(err, "%s: out of memory", path);
		}
		p.line = line;
		p.lineno++;
		p.pos = 0;
		p.failed = false;
		struct rule r = { .line = p.lineno };
		int status = next(&p);
		if (status == 0 && p.tok.kind != TOKEN_END) {
			status = parse_rule(&p, &r);
			if (status == 0 && !p.failed && p.tok.kind != TOKEN_END)
				status = expected(&p, "the end of the rule (one "
						  "rule per line)");
			if (p.failed)
				status = -1;
			if (status == 0) {
				/* up to the comment or the end */
				size_t n = p.tok.col - 1;
				while (n && isspace((unsigned char)line[n - 1]))
					n--;
				size_t lead = 0;
				while (isspace((unsigned char)line[lead]))
					lead++;
				r.text = strndup(line + lead, n - lead);
				struct rule *grown = room_for_one_more(rules,
								       &cap);
				if (!grown) {
					status = trace_error_set(err, "%s: out "
								 "of memory",
								 path);
				} else {
					rules->items = grown;
					rules->items[rules->count++] = r;
				}
			}
		}
		free(line);
		if (status != 0) {
			rule_free(&r);
			rules_free(rules);
			return -1;
		}
		start = end + 1;
	}
	if (!rules->count) {
		rules_free(rules);
		return trace_error_set(err, "%s: no rules (every line is empty or "
				       "a comment)", path);
	}
	return 0;
}

void rules_free(struct rules *rules)
{
	for (size_t i = 0; i < rules->count; i++)
		rule_free(&rules->items[i]);
	free(rules->items);
	free(rules->path);
	*rules = (struct rules){ 0 };
}

const char *rule_cmp_text(enum rule_cmp cmp)
{
	static const char *const texts[CMP_COUNT] = { "<=", "<", ">=", ">",
						       "==", "!=" };
	return cmp < CMP_COUNT ? texts[cmp] : "?";
}

bool rule_compare(double value, enum rule_cmp cmp, double number)
{
	switch (cmp) {
	case CMP_LE: return value <= number;
	case CMP_LT: return value < number;
	case CMP_GE: return value >= number;
	case CMP_GT: return value > number;
	case CMP_EQ: return value == number;
	case CMP_NE: return value != number;
	default: return false;
	}
}
