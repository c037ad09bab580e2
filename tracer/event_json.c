/* Trace events as JSON (event_json.h). */
#include "event_json.h"

#include <string.h>

void event_json_head(struct jsonw *w, const char *name, size_t name_len,
		     const char *cat, char ph, int64_t ts_ns, int64_t pid,
		     int64_t tid)
{
	char phase[] = { ph, '\0' };

	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_strn(w, name, name_len);
	jsonw_lit(w, ",\"cat\":\"");
	jsonw_cstr(w, cat);
	jsonw_lit(w, "\",\"ph\":\"");
	jsonw_cstr(w, phase);
	jsonw_lit(w, "\",\"ts\":");
	jsonw_us(w, ts_ns);
	jsonw_lit(w, ",\"pid\":");
	jsonw_i64(w, pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, tid);
}

static void optional_u64(struct jsonw *w, const char *key_text, uint64_t v)
{
	if (!v)
		return;
	jsonw_cstr(w, key_text);
	jsonw_u64(w, v);
}

static void optional_i64(struct jsonw *w, const char *key_text, int64_t v)
{
	if (!v)
		return;
	jsonw_cstr(w, key_text);
	jsonw_i64(w, v);
}

void event_json_diag(struct jsonw *w, const struct diag_json *d)
{
	char scope[] = { d->scope, '\0' };

	event_json_head(w, d->kind, strlen(d->kind), "amp.diag", 'i',
			d->ts_ns, d->pid, d->tid);
	jsonw_lit(w, ",\"s\":\"");
	jsonw_cstr(w, scope);
	jsonw_lit(w, "\",\"args\":{\"kind\":");
	jsonw_str(w, d->kind);
	jsonw_lit(w, ",\"message\":");
	jsonw_str(w, d->message);
	if (d->fix) {
		jsonw_lit(w, ",\"fix\":");
		jsonw_str(w, d->fix);
		jsonw_lit(w, ",\"severity\":");
		jsonw_str(w, d->severity);
		jsonw_lit(w, ",\"count\":");
		jsonw_u64(w, d->count);
	}
	/* ids only when known: a reader folds a finding's event into the
	 * finding it recomputes by (kind, op_id, tensor), absent meaning 0 */
	optional_u64(w, ",\"op_id\":", d->op_id);
	optional_u64(w, ",\"tensor\":", d->tensor);
	optional_i64(w, ",\"thread\":", d->thread);
	optional_i64(w, ",\"other_thread\":", d->other_thread);
	jsonw_lit(w, "}}");
}
