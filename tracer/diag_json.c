/* amp.diag events as JSON (diag_json.h). */
#include "diag_json.h"

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

void diag_json_write(struct jsonw *w, const struct diag_json *d)
{
	char scope[] = { d->scope, '\0' };

	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, d->kind);
	jsonw_lit(w, ",\"cat\":\"amp.diag\",\"ph\":\"i\",\"ts\":");
	jsonw_us(w, d->ts_ns);
	jsonw_lit(w, ",\"pid\":");
	jsonw_i64(w, d->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, d->tid);
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
