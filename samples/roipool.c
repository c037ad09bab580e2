/* roipool: the forum's RoIPool question ("Can autocast be used around the
 * whole training loop?" thread): a module one cannot change whose `rois`
 * argument must never be cast to low precision.  The answer there:
 *
 *   class RoIPool(_RoIPool):
 *       def forward(self, x, rois):
 *           with autocast(enabled=False):
 *               out = super().forward(x.float(), rois)
 *           return out
 *
 * Here the "imported" roi_pool averages features over [x1, x2] of one
 * sequence per roi and, like torchvision's, wants input and rois of the
 * same dtype.  Its rois are positions up to --seq - 1 (300 by default):
 * in bf16 position 297 would become 296, so they must stay f32.  Called
 * bare inside autocast it fails (the features are bf16); the wrapper runs
 * it in f32 with autocast off.  Then the model (linear features ->
 * wrapped RoIPool -> linear classifier) trains on rois whose class shows
 * in the features they cover. */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#define IN_FEATURES 16
#define ROIS_PER_SEQUENCE 8

/* The imported function: pooled[k] = mean(x[b_k, x1_k : x2_k + 1, :]).
 * x (B, L, C), rois (K, 3) of [batch index, x1, x2]. */
static amp_tensor *roi_pool(amp_tensor *x, amp_tensor *rois, int *status)
{
	int64_t k = amp_tensor_shape(rois)[0];
	amp_tensor *pooled[64];
	float coords[64 * 3];

	if (amp_tensor_dtype(x) != amp_tensor_dtype(rois)) {
		fprintf(stderr, "roi_pool: Expected tensor for argument #1 'input' "
				"to have the same type as tensor for argument #2 "
				"'rois'; but type %s does not equal %s\n",
			amp_dtype_torch_name(amp_tensor_dtype(x)),
			amp_dtype_torch_name(amp_tensor_dtype(rois)));
		*status = AMP_ERR_DTYPE;
		return NULL;
	}
	sample_check_status(amp_tensor_read(rois, AMP_DTYPE_F32, coords,
					    (size_t)(k * 3)),
			    "rois");
	for (int64_t r = 0; r < k; r++) {
		int64_t b = (int64_t)coords[r * 3];
		int64_t x1 = (int64_t)coords[r * 3 + 1], x2 = (int64_t)coords[r * 3 + 2];
		amp_tensor *seq = sample_check(amp_slice(x, 0, b, b + 1, 1), "slice");
		amp_tensor *span = sample_check(amp_slice(seq, 1, x1, x2 + 1, 1),
						"slice");
		pooled[r] = sample_check(
			amp_mean_dim(span, 1, (int64_t[]){ 1 }, false,
				     AMP_DTYPE_NONE),
			"mean");
		amp_tensor_free(seq);
		amp_tensor_free(span);
	}
	amp_tensor *out = sample_check(amp_cat(pooled, (int)k, 0), "cat");
	sample_free_tensors(pooled, (size_t)k);
	*status = AMP_OK;
	return out;
}

/* The wrapper of the forum's answer. */
static amp_tensor *wrapped_roi_pool(const struct sample_options *o,
				    amp_tensor *x, amp_tensor *rois)
{
	int status;

	sample_autocast_disable(o, "RoIPool");
	amp_tensor *x32 = sample_check(amp_to(x, AMP_DTYPE_F32), "x.float()");
	amp_tensor *out = roi_pool(x32, rois, &status);
	amp_autocast_exit();
	amp_tensor_free(x32);
	sample_check_status(status, "roi_pool");
	return out;
}

/* Sequences of noise with each roi's span carrying its class centre. */
static void make_batch(struct sample_data *data, const struct sample_options *o,
		       amp_tensor **x, amp_tensor **rois, amp_tensor **labels)
{
	int64_t batch = o->batch, length = o->seq;
	int64_t nrois = batch * ROIS_PER_SEQUENCE;
	int64_t slot = length / ROIS_PER_SEQUENCE;
	float *values = sample_check_ptr(
		malloc((size_t)(batch * length * IN_FEATURES) * sizeof(float)),
		"batch");
	float *coords = sample_check_ptr(malloc((size_t)nrois * 3 * sizeof(float)),
					 "rois");
	int64_t *classes = sample_check_ptr(malloc((size_t)nrois * sizeof(int64_t)),
					    "labels");

	for (int64_t i = 0; i < batch * length * IN_FEATURES; i++)
		values[i] = (float)sample_rng_normal(&data->rng);
	for (int64_t r = 0; r < nrois; r++) {
		int64_t b = r / ROIS_PER_SEQUENCE, j = r % ROIS_PER_SEQUENCE;
		int64_t x1 = j * slot + (int64_t)(sample_rng_next(&data->rng) %
						  (uint64_t)(slot / 2 + 1));
		int64_t x2 = (j + 1) * slot - 1;
		int c = (int)(sample_rng_next(&data->rng) % SAMPLE_CLASSES);
		coords[r * 3] = (float)b;
		coords[r * 3 + 1] = (float)x1;
		coords[r * 3 + 2] = (float)x2;
		classes[r] = c;
		for (int64_t p = x1; p <= x2; p++)
			for (int f = 0; f < IN_FEATURES; f++)
				values[(b * length + p) * IN_FEATURES + f] +=
					data->centers[c * IN_FEATURES + f];
	}
	int64_t xshape[3] = { batch, length, IN_FEATURES };
	int64_t rshape[2] = { nrois, 3 }, lshape[1] = { nrois };
	*x = sample_check(amp_from_data(3, xshape, AMP_DTYPE_F32, o->device, values),
			  "input");
	*rois = sample_check(amp_from_data(2, rshape, AMP_DTYPE_F32, o->device,
					   coords),
			     "rois");
	*labels = sample_check(amp_from_data(1, lshape, AMP_DTYPE_I64, o->device,
					     classes),
			       "labels");
	amp_tensor_set_name(*rois, "rois");
	free(values);
	free(coords);
	free(classes);
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "roipool",
		.summary = "The forum's RoIPool: an imported module whose rois must "
			   "never be cast to low\nprecision, wrapped so it runs "
			   "with autocast disabled on x.float().",
		.flags = SAMPLE_FLAG_SEQ,
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 2, .hidden = 32,
			      .layers = 2, .seed = 7, .lr = 0.1, .seq = 300 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	if (o.seq < ROIS_PER_SEQUENCE * 2 || o.batch * ROIS_PER_SEQUENCE > 64) {
		fprintf(stderr, "roipool: needs --seq >= %d and --batch <= %d\n",
			ROIS_PER_SEQUENCE * 2, 64 / ROIS_PER_SEQUENCE);
		return 2;
	}
	/* the task's MLP is the classifier head over pooled features; the
	 * rois' data has its own class centres over IN_FEATURES */
	sample_task_init(&task, &o, "head.");
	struct sample_data spans;
	sample_data_init(&spans, IN_FEATURES, SAMPLE_CLASSES, (uint64_t)o.seed,
			 o.device);
	int64_t wshape[2] = { o.hidden, IN_FEATURES }, bshape[1] = { o.hidden };
	amp_tensor *fw = sample_param(2, wshape, 0.25, &task.rng, o.device,
				      "features.weight");
	amp_tensor *fb = sample_param(1, bshape, 0.25, &task.rng, o.device,
				      "features.bias");
	task.params[task.nparams++] = fw;
	task.params[task.nparams++] = fb;
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	float far = (float)(o.seq - 3);
	printf("rois stay f32: position %.0f would be %.0f in bf16\n", far,
	       amp_bf16_to_f32(amp_f32_to_bf16(far)));
	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *x, *rois, *labels;
		make_batch(&spans, &o, &x, &rois, &labels);

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *features = sample_check(amp_linear(x, fw, fb), "linear");
		if (step == 1) {
			int status;
			amp_tensor *bare = roi_pool(features, rois, &status);
			printf("bare roi_pool inside autocast: %s\n",
			       bare ? "ran" : "failed (features are low precision, "
					      "rois f32)");
			amp_tensor_free(bare);
		}
		amp_tensor *pooled = wrapped_roi_pool(&o, features, rois);
		amp_tensor *loss = sample_task_loss(&task, pooled, labels);
		amp_autocast_exit();

		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, pooled, features, x, rois, labels);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	amp_tensor_free(fw);
	amp_tensor_free(fb);
	sample_data_free(&spans);
	sample_task_free(&task);
	return 0;
}
