/* threads: the DataParallel pitfall of PyTorch's AMP examples ("Working
 * with Multiple GPUs").  nn.DataParallel runs the forward of its replicas
 * in worker threads, and autocast state is thread-local:
 *
 *   with autocast(device):
 *       output = dp_model(input)   # workers do NOT autocast
 *       loss = loss_fn(output)     # main thread does, too late
 *
 * The fix is autocast inside the model's forward, so each worker enters
 * its own region:
 *
 *   class MyModel(nn.Module):
 *       def forward(self, input):
 *           with autocast(device): ...
 *
 * Here --threads workers each run the MLP on a slice of the batch (the
 * replicas share the weights, as on one device).  The first forward shows
 * the pitfall (f32 outputs from the workers); training then uses the fix. */
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 16

struct replica {
	const struct sample_task *task;
	const struct sample_options *opts;
	amp_tensor *input, *output;
	bool autocast_in_forward;
};

static void *replica_forward(void *arg)
{
	struct replica *r = arg;

	if (r->autocast_in_forward)
		sample_autocast_enter(r->opts, "replica.forward");
	r->output = mlp_forward(&r->task->model, r->input);
	if (r->autocast_in_forward)
		amp_autocast_exit();
	return NULL;
}

/* Scatter the batch over the workers, run them, gather along dim 0. */
static amp_tensor *data_parallel(const struct sample_task *task,
				 const struct sample_options *o, amp_tensor *input,
				 bool autocast_in_forward, enum amp_dtype *dtype)
{
	int n = (int)o->threads;
	int64_t batch = amp_tensor_shape(input)[0];
	struct replica replicas[MAX_THREADS];
	pthread_t threads[MAX_THREADS];
	amp_tensor *outputs[MAX_THREADS];

	for (int i = 0; i < n; i++) {
		replicas[i] = (struct replica){
			.task = task, .opts = o,
			.input = sample_check(amp_slice(input, 0, batch * i / n,
							batch * (i + 1) / n, 1),
					      "scatter"),
			.autocast_in_forward = autocast_in_forward,
		};
		if (pthread_create(&threads[i], NULL, replica_forward,
				   &replicas[i]) != 0) {
			fprintf(stderr, "threads: cannot start a worker\n");
			exit(1);
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		outputs[i] = replicas[i].output;
		amp_tensor_free(replicas[i].input);
	}
	*dtype = amp_tensor_dtype(outputs[0]);
	amp_tensor *gathered = sample_check(amp_cat(outputs, n, 0), "gather");
	sample_free_tensors(outputs, (size_t)n);
	return gathered;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "threads",
		.summary = "The DataParallel pitfall: worker threads running the "
			   "forward do not inherit the\nmain thread's autocast; "
			   "the fix enters autocast inside the forward.",
		.flags = SAMPLE_FLAG_THREADS,
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 3, .seed = 9, .lr = 0.05, .threads = 2 },
	};
	struct sample_options o;
	struct sample_task task;
	enum amp_dtype dtype;

	sample_parse(argc, argv, &info, &o);
	if (o.threads > MAX_THREADS || o.threads > o.batch) {
		fprintf(stderr, "threads: --threads must be <= %d and <= --batch\n",
			MAX_THREADS);
		return 2;
	}
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	/* the pitfall: autocast in the main thread only */
	amp_tensor *input, *target;
	sample_data_batch(&task.data, (int)o.batch, &input, &target);
	sample_autocast_enter(&o, "main");
	amp_tensor *output = data_parallel(&task, &o, input, false, &dtype);
	amp_autocast_exit();
	printf("autocast in the main thread only: the %ld workers produced %s\n",
	       o.threads, amp_dtype_name(dtype));
	SAMPLE_FREE_TENSORS(output, input, target);

	for (long step = 1; step <= o.steps; step++) {
		sample_data_batch(&task.data, (int)o.batch, &input, &target);
		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "main");
		output = data_parallel(&task, &o, input, true, &dtype);
		amp_tensor *loss = sample_cross_entropy(output, target);
		amp_autocast_exit();
		if (step == 1)
			printf("autocast inside the forward: the workers produce "
			       "%s\n",
			       amp_dtype_name(dtype));

		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, output, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
