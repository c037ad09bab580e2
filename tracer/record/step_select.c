/* The --steps SPEC and --max-size SIZE parsers (step_select.h). */
#include "step_select.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int fail(char *error, size_t size, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsnprintf(error, size, format, ap);
	va_end(ap);
	return -1;
}

/* A step number at *p (digits only), advancing p; false when none. */
static bool step_number(const char **p, uint64_t *out)
{
	const char *s = *p;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > (uint64_t)INT64_MAX)
		return false;
	*out = v;
	*p = end;
	return true;
}

/* One item, [text, end). */
static int parse_item(const char *text, size_t len, struct step_select *s,
		      char *error, size_t size)
{
	char item[64];
	struct step_select_item it = { STEP_SELECT_RANGE, 0, 0 };

	if (len == 0 || len >= sizeof item)
		return fail(error, size, "'%.*s': expected N, A:B, A:, every:K, "
			    "all or none", (int)(len < 40 ? len : 40), text);
	memcpy(item, text, len);
	item[len] = '\0';
	const char *p = item;
	if (!strcmp(item, "all")) {
		it.last = UINT64_MAX;
	} else if (!strcmp(item, "none")) {
		return 0;
	} else if (!strncmp(item, "every:", 6)) {
		p += 6;
		it.kind = STEP_SELECT_EVERY;
		if (!step_number(&p, &it.first) || *p || !it.first)
			return fail(error, size, "'%s': every:K needs a step count "
				    "K of at least 1", item);
	} else {
		if (!step_number(&p, &it.first))
			return fail(error, size, "'%s': expected N, A:B, A:, "
				    "every:K, all or none", item);
		it.last = it.first;
		if (*p == ':') {
			p++;
			if (!*p)
				it.last = UINT64_MAX;
			else if (!step_number(&p, &it.last))
				return fail(error, size, "'%s': expected a step "
					    "number after ':'", item);
		}
		if (*p)
			return fail(error, size, "'%s': unexpected '%s'", item, p);
		if (it.last < it.first)
			return fail(error, size, "'%s': the range ends before "
				    "it begins", item);
	}
	if (s->count == STEP_SELECT_MAX_ITEMS)
		return fail(error, size, "at most %d items", STEP_SELECT_MAX_ITEMS);
	s->items[s->count++] = it;
	return 0;
}

int step_select_parse(const char *spec, struct step_select *out, char *error,
		      size_t size)
{
	struct step_select s = { 0 };

	if (!spec || !*spec)
		return fail(error, size, "an empty step list (expected N, A:B, "
			    "A:, every:K, all or none)");
	for (const char *p = spec;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (parse_item(p, len, &s, error, size) != 0)
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	*out = s;
	return 0;
}

bool step_select_has(const struct step_select *s, uint64_t step)
{
	for (int i = 0; i < s->count; i++) {
		const struct step_select_item *it = &s->items[i];
		if (it->kind == STEP_SELECT_EVERY ? step % it->first == 0
						  : step >= it->first &&
							    step <= it->last)
			return true;
	}
	return false;
}

bool step_select_all(const struct step_select *s)
{
	for (int i = 0; i < s->count; i++)
		if (s->items[i].kind == STEP_SELECT_RANGE &&
		    s->items[i].first == 0 && s->items[i].last == UINT64_MAX)
			return true;
	return false;
}

static void append(char *out, size_t size, const char *format, ...)
{
	size_t used = strlen(out);
	va_list ap;

	if (used >= size)
		return;
	va_start(ap, format);
	vsnprintf(out + used, size - used, format, ap);
	va_end(ap);
}

void step_select_describe(const struct step_select *s, char *out,
			  size_t size)
{
	if (!size)
		return;
	out[0] = '\0';
	if (step_select_all(s)) {
		append(out, size, "all");
		return;
	}
	if (!s->count) {
		append(out, size, "none");
		return;
	}
	for (int i = 0; i < s->count; i++) {
		const struct step_select_item *it = &s->items[i];
		const char *sep = i ? ", " : "";
		if (it->kind == STEP_SELECT_EVERY)
			append(out, size, "%severy %llu%s", sep,
			       (unsigned long long)it->first,
			       it->first == 1 ? "" : "th");
		else if (it->last == UINT64_MAX)
			append(out, size, "%s%llu on", sep,
			       (unsigned long long)it->first);
		else if (it->last == it->first)
			append(out, size, "%s%llu", sep,
			       (unsigned long long)it->first);
		else
			append(out, size, "%s%llu-%llu", sep,
			       (unsigned long long)it->first,
			       (unsigned long long)it->last);
	}
}

void step_size_text(uint64_t bytes, char *out, size_t size)
{
	if (bytes >= 1000000000)
		snprintf(out, size, "%.3g GB", (double)bytes / 1e9);
	else if (bytes >= 1000000)
		snprintf(out, size, "%.3g MB", (double)bytes / 1e6);
	else
		snprintf(out, size, "%.3g kB", (double)bytes / 1e3);
}

int step_size_parse(const char *text, uint64_t *bytes, char *error,
		    size_t size)
{
	static const struct { const char *suffix; double factor; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", 1e3 }, { "KB", 1e3 }, { "KiB", 1024.0 },
		{ "M", 1e6 }, { "MB", 1e6 }, { "MiB", 1048576.0 },
		{ "G", 1e9 }, { "GB", 1e9 }, { "GiB", 1073741824.0 },
		{ "T", 1e12 }, { "TB", 1e12 }, { "TiB", 1099511627776.0 },
	};

	if (text && !strcmp(text, "none")) {
		*bytes = 0;
		return 0;
	}
	char *end;
	errno = 0;
	double v = text && isdigit((unsigned char)*text) ? strtod(text, &end)
							 : NAN;
	if (isnan(v) || errno == ERANGE)
		return fail(error, size, "'%s': expected a size such as 100M, "
			    "2G or 500MB, or none", text ? text : "");
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		double b = v * units[i].factor;
		if (b >= 9.2e18)
			return fail(error, size, "'%s': too large", text);
		*bytes = (uint64_t)b;
		return 0;
	}
	return fail(error, size, "'%s': unknown unit '%s' (B, K, M, G, T, "
		    "KiB, MiB, GiB, TiB)", text, end);
}
