// The RecordFunction observer: the bridge's only C++, a library of its
// own built against the exact torch it runs in and bound to the _bridge
// extension at run time (observer.h: amptrace_observer_bind).  It
// describes what torch's dispatcher runs, in libamp's terms, and leaves
// every decision to events.c.
//
// Why this shape:
//   - A global RecordFunction callback sees every op on every thread with
//     its inputs and outputs, including the casts autocast makes inside a
//     wrapped op, TorchScript ops and backward nodes (reference:
//     torch-bridge.md).  Python's dispatch modes see less and cost more.
//   - It must be compiled with -DNDEBUG (RecordFunction::inputs() has an
//     inline assert) and against the torch it runs in (C++ ABI).
//   - Tensor ids: a TensorImpl's address is unique while we hold a weak
//     reference to it (c10 frees the memory of an impl only when its weak
//     count drops too), so the map below never mistakes a new tensor for a
//     dead one; dead entries are swept when the map has doubled.
#include "observer.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <ATen/Functions.h>
#include <c10/core/Event.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

struct tensor_entry {
	c10::weak_intrusive_ptr<c10::TensorImpl> weak;
	uint64_t id;
	const char *name; // interned: events may hold it while it changes
};

std::mutex ids_lock;
std::unordered_set<std::string> interned_names;

const char *intern(const char *name)
{
	return interned_names.emplace(name).first->c_str();
}
std::unordered_map<const c10::TensorImpl *, tensor_entry> ids;
size_t sweep_at = 4096;
uint64_t next_id = 1;
std::atomic<bool> enabled{false};
const struct obs_events *events; // bound once, before install

// Drops the entries of dead tensors (called with ids_lock held).
void sweep_dead(void)
{
	for (auto it = ids.begin(); it != ids.end();) {
		if (it->second.weak.expired())
			it = ids.erase(it);
		else
			++it;
	}
	sweep_at = ids.size() * 2 > 4096 ? ids.size() * 2 : 4096;
}

tensor_entry &entry_for(c10::TensorImpl *impl)
{
	auto it = ids.find(impl);
	if (it != ids.end() && !it->second.weak.expired())
		return it->second;
	if (it != ids.end())
		ids.erase(it);
	if (ids.size() >= sweep_at)
		sweep_dead();
	auto strong = c10::intrusive_ptr<c10::TensorImpl>::
		unsafe_reclaim_from_nonowning(impl);
	tensor_entry e{ c10::weak_intrusive_ptr<c10::TensorImpl>(strong),
			next_id++, nullptr };
	return ids.emplace(impl, std::move(e)).first->second;
}

enum amp_dtype dtype_of(c10::ScalarType t)
{
	switch (t) {
	case c10::ScalarType::Double: return AMP_DTYPE_F64;
	case c10::ScalarType::Float: return AMP_DTYPE_F32;
	case c10::ScalarType::Half: return AMP_DTYPE_F16;
	case c10::ScalarType::BFloat16: return AMP_DTYPE_BF16;
	case c10::ScalarType::Long: return AMP_DTYPE_I64;
	case c10::ScalarType::Bool: return AMP_DTYPE_BOOL;
	// libamp has no 8/16-bit integers nor complex: the nearest type
	// autocast treats the same way (never cast).
	case c10::ScalarType::ComplexDouble:
	case c10::ScalarType::ComplexFloat: return AMP_DTYPE_F64;
	default: return AMP_DTYPE_I32;
	}
}

// An input the observer has never seen was made where no op is shown
// (inside an op, or before recording began): it gets a name saying so,
// so every input of the trace has a known origin (FORMAT.md).
const char *const made_in_backward = "(saved inside a forward op)";
const char *const made_elsewhere = "(made outside the recorded ops)";

// Tests: the value checks read host tensors as they read a GPU's, reduced
// where their op ends (AMPTRACE_TEST_QUEUED_VALUES, read at bind): as the
// CUDA module reduces them (1), or by torch's ops (torch; a GPU's too).
enum host_values { host_values_read, host_values_module, host_values_torch };
host_values queue_host_values = host_values_read;

// A tensor whose elements the value checks may read, on the host or on a
// device: strided, with storage, not nested (its parts have no common
// strides), not a Python subclass's (its strides may be Python's to
// compute; a DTensor's or FakeTensor's are not local).
bool plain_tensor(const c10::TensorImpl *impl)
{
	return impl->layout() == c10::kStrided && impl->has_storage() &&
	       !impl->is_nested() &&
	       !impl->key_set().has(c10::DispatchKey::Python);
}

// Whether torch gives the tensor's dimensions as numbers.  A nested
// tensor has none (its parts differ; sizes() throws, and torch prints
// the throw, drops our callback and leaves the op open), nor has one
// with symbolic sizes (jagged, or traced with dynamic shapes).
bool has_plain_sizes(const c10::TensorImpl *impl)
{
	return !impl->is_nested() && !impl->has_symbolic_sizes_strides();
}

// The tensor's dimensions into info, or none (shape [], FORMAT.md
// allows no absent shape) for a tensor without plain sizes.
void describe_shape(const c10::TensorImpl *impl,
		    struct producer_tensor *info)
{
	info->ndim = 0;
	if (!has_plain_sizes(impl))
		return;
	auto sizes = impl->sizes();
	size_t ndim = sizes.size() < PRODUCER_MAX_DIMS ? sizes.size()
						       : PRODUCER_MAX_DIMS;
	info->ndim = (uint8_t)ndim;
	for (size_t d = 0; d < ndim; d++)
		info->shape[d] = sizes[d];
}

// A tensor in host memory, read in place (obs_args.data): the address of
// its first element, whether it is dense, its strides; or nullptr.  Not
// a Python subclass's (its strides may be Python's to compute), nor one
// whose storage torch does not let be read (functional and fake tensors
// throw).
const void *host_elements(c10::TensorImpl *impl, bool *dense,
			  int64_t strides[PRODUCER_MAX_DIMS])
{
	if (!impl->is_cpu() || queue_host_values != host_values_read ||
	    !plain_tensor(impl) ||
	    impl->dim() > PRODUCER_MAX_DIMS)
		return nullptr;
	try {
		auto s = impl->strides();
		for (size_t d = 0; d < s.size(); d++)
			strides[d] = s[d];
		*dense = impl->is_non_overlapping_and_dense();
		return impl->data();
	} catch (const std::exception &) {
		return nullptr;
	}
}

// Where describe() puts what the value checks read: the elements of host
// tensors (obs_args.data), and device tensors kept for cuda_queue.
struct value_sink {
	bool wanted;
	std::vector<at::Tensor> *device; // index i: tensor i, if on a GPU
};

void keep_device_tensor(const at::Tensor &t, int i, const value_sink &sink)
{
	if (!sink.device ||
	    !(t.is_cuda() ||
	      (queue_host_values != host_values_read && t.is_cpu())))
		return;
	if ((int)sink.device->size() <= i)
		sink.device->resize(i + 1);
	(*sink.device)[i] = t;
}

// Called with ids_lock held (once per call, not per tensor).
void describe(const at::Tensor &t, struct obs_args *a, bool optional,
	      const char *fresh_name, const value_sink &sink)
{
	int i = a->ntensors;
	if (i >= OBS_MAX_TENSORS)
		return;
	struct producer_tensor *info = &a->tensors[i];
	a->optional[i] = optional;
	a->ntensors = i + 1;
	a->data[i] = nullptr;
	a->numel[i] = 0;
	if (!t.defined()) {
		*info = producer_tensor{};
		info->id = 0;
		a->versions[i] = 0;
		return;
	}
	c10::TensorImpl *impl = t.unsafeGetTensorImpl();
	uint64_t first_new = next_id;
	tensor_entry &e = entry_for(impl);
	if (fresh_name && e.id >= first_new)
		e.name = fresh_name;
	info->id = e.id;
	info->name = e.name;
	info->producer_op_id = 0; // torch does not say which op made it
	info->dtype = dtype_of(t.scalar_type());
	info->device = t.is_cuda() ? AMP_DEVICE_CUDA : AMP_DEVICE_CPU;
	describe_shape(impl, info);
	info->flags = (t.requires_grad() ? PRODUCER_TENSOR_REQUIRES_GRAD : 0u) |
		      (t.is_leaf() ? PRODUCER_TENSOR_LEAF : 0u) |
		      (t.is_view() ? PRODUCER_TENSOR_VIEW : 0u);
	/* an inference tensor has no version counter: reading it throws
	 * inside torch's callback, which drops the call and prints a stack */
	a->versions[i] = t.is_inference() ? 0 : (int64_t)t._version();
	if (sink.wanted) {
		try {
			a->numel[i] = impl->numel();
			a->data[i] = host_elements(impl, &a->dense[i],
						   a->strides[i]);
		} catch (const std::exception &) {
			// a tensor without a plain element count (nested)
		}
		keep_device_tensor(t, i, sink);
	}
}

void describe_values(c10::ArrayRef<const c10::IValue> values,
		     struct obs_args *a, const char *fresh_name,
		     uint64_t optional_args, int dtype_index,
		     const value_sink &sink)
{
	a->ntensors = 0;
	a->dtype_arg = AMP_DTYPE_NONE;
	std::lock_guard<std::mutex> guard(ids_lock);
	for (size_t i = 0; i < values.size(); i++) {
		if ((int)i == dtype_index && values[i].isInt()) {
			a->dtype_arg = dtype_of(
				static_cast<c10::ScalarType>(values[i].toInt()));
			continue;
		}
		const c10::IValue &v = values[i];
		if (v.isTensor()) {
			describe(v.toTensor(), a,
				 i < 64 && (optional_args >> i & 1), fresh_name,
				 sink);
		} else if (v.isTensorList()) {
			for (const at::Tensor &t : v.toTensorList().vec())
				describe(t, a, false, fresh_name, sink);
		} else if (v.isList()) {
			for (const c10::IValue &e : v.toListRef())
				if (e.isTensor())
					describe(e.toTensor(), a, false, fresh_name,
						 sink);
		}
	}
}

// From the schema, once per operator: which arguments are
// optional<Tensor> (bit i of optional_args) and where `dtype` is.
void read_schema(const c10::OperatorName &name, struct obs_op *op)
{
	auto handle = c10::Dispatcher::singleton().findSchema(name);
	uint64_t mask = 0;

	op->dtype_index = -1;
	if (!handle)
		return;
	const auto &args = handle->schema().arguments();
	for (size_t i = 0; i < args.size() && i < 64; i++) {
		const auto &type = args[i].type();
		if (args[i].name() == "dtype")
			op->dtype_index = (int)i;
		if (type->kind() == c10::TypeKind::OptionalType &&
		    type->containedTypes().size() == 1 &&
		    type->containedTypes()[0]->kind() ==
			    c10::TypeKind::TensorType)
			mask |= uint64_t(1) << i;
	}
	op->optional_args = mask;
	if (!handle->schema().is_varret())
		op->returns = (int)handle->schema().returns().size();
	if (!handle->schema().is_vararg())
		op->arguments = (int)args.size();
}

// Per operator and thread (events.c fills its policy rows lazily, so no
// sharing), described once and owned by the thread.  A dispatcher op's
// name is its schema's own string, one per overload, so its address is
// the key (by content, "aten::add" would mix add.Tensor and add.Scalar);
// other names (autograd nodes, the engine's wrappers, a custom autograd
// Function's apply, even when named "aten::...") are built per call, often
// at an address the last such name had, and are looked up by content,
// without a copy.
struct owned_op {
	std::string name;
	obs_op op;
};

struct frame_context;

// All a thread keeps, behind one thread-local pointer: each access to a
// thread_local of this dlopen'ed library is a __tls_get_addr call, and
// the callbacks run on every op of every thread.
struct thread_cache {
	// The operators seen last, by name address (schema ops only):
	// most calls are found here without hashing.
	static constexpr size_t recent_slots = 256;
	const char *recent_name[recent_slots] = {};
	struct obs_op *recent_op[recent_slots] = {};
	std::unordered_map<const char *, struct obs_op *> by_address;
	std::unordered_map<std::string_view, struct obs_op *> by_name;
	std::vector<std::unique_ptr<owned_op>> owned;
	// The described arguments or results of the call at hand (~9 KiB:
	// on the heap, not on the caller's stack).
	struct obs_args args = {};
	// frame_contexts to reuse: every call on every thread gets one.
	frame_context *free_contexts = nullptr;
	// The call events.c is ending now, and its device results: what
	// cuda_queue reads.
	frame_context *ending = nullptr;
	std::vector<at::Tensor> ending_results;

	~thread_cache();
};

thread_local thread_cache *cache;
pthread_key_t cache_key;
pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

// Threads come and go (pools, DataLoader workers): their cache goes too.
void cache_free(void *p)
{
	delete static_cast<thread_cache *>(p);
	cache = nullptr;
}

void cache_key_create(void)
{
	pthread_key_create(&cache_key, cache_free);
}

thread_cache &cache_for_thread(void)
{
	thread_cache *c = cache;
	if (__builtin_expect(!c, 0)) {
		c = cache = new thread_cache;
		pthread_once(&cache_key_once, cache_key_create);
		pthread_setspecific(cache_key, c);
	}
	return *c;
}

// `opname`: the call's schema name where it has one (then `name` is the
// schema's own string).
struct obs_op *describe_op(thread_cache &tc, const at::RecordFunction &fn,
			   const char *name,
			   const c10::optional<c10::OperatorName> &opname)
{
	auto owned = std::make_unique<owned_op>();
	owned->name = name;
	obs_op *op = &owned->op;
	*op = obs_op{};
	op->dtype_index = -1;
	op->returns = -1;
	op->arguments = -1;
	if (!strncmp(name, "aten::", 6)) {
		op->aten = true;
		snprintf(op->op, sizeof op->op, "%s", name + 6);
	} else {
		snprintf(op->op, sizeof op->op, "%s", name);
		op->backward_node =
			fn.scope() == at::RecordScope::BACKWARD_FUNCTION ||
			!strncmp(name, "autograd::", 10);
	}
	if (opname) {
		snprintf(op->overload, sizeof op->overload, "%s",
			 opname->overload_name.c_str());
		read_schema(*opname, op);
		tc.by_address.emplace(name, op);
	} else {
		tc.by_name.emplace(std::string_view(owned->name), op);
	}
	tc.owned.push_back(std::move(owned));
	return op;
}

struct obs_op *by_content(thread_cache &tc, const at::RecordFunction &fn,
			  const char *name,
			  const c10::optional<c10::OperatorName> &opname)
{
	auto named = tc.by_name.find(std::string_view(name));
	return named != tc.by_name.end() ? named->second
					 : describe_op(tc, fn, name, opname);
}

struct obs_op *op_for(thread_cache &tc, const at::RecordFunction &fn)
{
	const char *name = fn.name();
	size_t slot = (reinterpret_cast<uintptr_t>(name) >> 3) &
		      (thread_cache::recent_slots - 1);
	if (tc.recent_name[slot] == name)
		return tc.recent_op[slot];
	if (strncmp(name, "aten::", 6))
		return by_content(tc, fn, name, c10::nullopt);
	// A schema's name lives as long as its operator: an address found
	// here or in by_address is that operator's, never another name's.
	struct obs_op *op;
	auto it = tc.by_address.find(name);
	if (it != tc.by_address.end()) {
		op = it->second;
	} else {
		auto opname = fn.operator_name();
		if (!opname)
			return by_content(tc, fn, name, opname);
		op = describe_op(tc, fn, name, opname);
	}
	tc.recent_name[slot] = name;
	tc.recent_op[slot] = op;
	return op;
}

// One per call in flight; recycled through the thread's free list.
struct frame_context : at::ObserverContext {
	unsigned want;
	const struct obs_op *op;
	int exceptions;    // std::uncaught_exceptions() at a recorded start
	// OBS_WANT_VALUES: the arguments on a GPU (index as described),
	// released when the call ends
	std::vector<at::Tensor> device_args;
	frame_context *next_free;

	static void *operator new(size_t size);
	static void operator delete(void *p);
};

void *frame_context::operator new(size_t size)
{
	thread_cache &tc = cache_for_thread();
	frame_context *c = tc.free_contexts;
	if (c) {
		tc.free_contexts = c->next_free;
		return c;
	}
	return ::operator new(size);
}

// A context is destroyed before its memory comes here: the next call
// that takes it constructs it again.
void frame_context::operator delete(void *p)
{
	frame_context *c = static_cast<frame_context *>(p);
	thread_cache *tc = cache;
	if (!tc) { // the thread's cache is gone (its exit)
		::operator delete(p);
		return;
	}
	c->next_free = tc->free_contexts;
	tc->free_contexts = c;
}

thread_cache::~thread_cache()
{
	while (free_contexts) {
		frame_context *c = free_contexts;
		free_contexts = c->next_free;
		::operator delete(c);
	}
}

// The calling thread's autocast state.  torch 2.4 replaced the
// per-device functions with ones taking the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_on(c10::DeviceType device)
{
	return at::autocast::is_autocast_enabled(device);
}
c10::ScalarType autocast_dtype(c10::DeviceType device)
{
	return at::autocast::get_autocast_dtype(device);
}
#else
bool autocast_on(c10::DeviceType device)
{
	return device == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled()
					      : at::autocast::is_enabled();
}
c10::ScalarType autocast_dtype(c10::DeviceType device)
{
	return device == c10::DeviceType::CPU
		       ? at::autocast::get_autocast_cpu_dtype()
		       : at::autocast::get_autocast_gpu_dtype();
}
#endif

bool autocast_any(void)
{
	return autocast_on(c10::DeviceType::CPU) ||
	       autocast_on(c10::DeviceType::CUDA);
}

// A call's own `count` values (count < 0: all): a boxed call (functorch's
// transforms re-dispatch every op boxed) records the whole stack, whose
// bottom holds the values of the calls it runs inside.
c10::ArrayRef<const c10::IValue> own_values(
	c10::ArrayRef<const c10::IValue> all, int count)
{
	if (count < 0 || all.size() <= (size_t)count)
		return all;
	return all.slice(all.size() - count);
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
	if (!enabled.load(std::memory_order_relaxed))
		return nullptr;
	thread_cache &tc = cache_for_thread();
	struct obs_op *op = op_for(tc, fn);
	unsigned want = events->begin(op, fn.scope() ==
				      at::RecordScope::BACKWARD_FUNCTION,
				      fn.seqNr(), autocast_any);
	auto ctx = std::make_unique<frame_context>();
	if (want & OBS_WANT_INPUTS) {
		struct obs_autocast ac;
		ac.enabled[AMP_DEVICE_CPU] = autocast_on(c10::DeviceType::CPU);
		ac.enabled[AMP_DEVICE_CUDA] = autocast_on(c10::DeviceType::CUDA);
		ac.dtype[AMP_DEVICE_CPU] =
			dtype_of(autocast_dtype(c10::DeviceType::CPU));
		ac.dtype[AMP_DEVICE_CUDA] =
			dtype_of(autocast_dtype(c10::DeviceType::CUDA));
		ac.cache_enabled = at::autocast::is_autocast_cache_enabled();
		ac.grad_enabled = c10::GradMode::is_enabled();
		value_sink sink{ (want & OBS_WANT_VALUES) != 0,
				 &ctx->device_args };
		describe_values(own_values(fn.inputs(), op->arguments), &tc.args,
				(want & OBS_IN_BACKWARD) ? made_in_backward
							 : made_elsewhere,
				op->optional_args, op->dtype_index, sink);
		events->begin_args(&tc.args, &ac);
	}
	ctx->want = want;
	ctx->op = op;
	// Only a call whose results are described reports a failure.
	ctx->exceptions =
		(want & OBS_WANT_OUTPUTS) ? std::uncaught_exceptions() : 0;
	return ctx;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *ctx)
{
	// A call that began before recording was on has no context.
	if (!ctx)
		return;
	auto *frame = static_cast<frame_context *>(ctx);
	if (!(frame->want & OBS_WANT_OUTPUTS)) {
		events->end(nullptr, false);
		return;
	}
	// RecordFunction ends in its destructor, also when the op throws.
	// The exception count alone misses that under torch 2.x (seen on
	// 2.11 wheels): a kernel that threw also never set the outputs of an
	// op whose schema returns something.
	bool failed = std::uncaught_exceptions() > frame->exceptions;
	const std::vector<c10::IValue> &outputs = fn.outputs();
	if (frame->op->returns > 0 && outputs.empty())
		failed = true;
	thread_cache &tc = cache_for_thread();
	value_sink sink{ (frame->want & OBS_WANT_VALUES) != 0,
			 &tc.ending_results };
	c10::ArrayRef<const c10::IValue> results(outputs.data(),
						 outputs.size());
	describe_values(own_values(results, frame->op->returns), &tc.args,
			nullptr, 0, -1, sink);
	tc.ending = frame;
	events->end(&tc.args, failed);
	tc.ending = nullptr;
	tc.ending_results.clear();
	frame->device_args.clear();
}

at::CallbackHandle callback;

int install(char *error, size_t size)
{
	if (callback)
		return 0;
	try {
		callback = at::addGlobalCallback(
			at::RecordFunctionCallback(on_start, on_end)
				.needsInputs(true)
				.needsOutputs(true)
				.scopes({ at::RecordScope::FUNCTION,
					  at::RecordScope::BACKWARD_FUNCTION }));
		at::disableCallback(callback);
	} catch (const std::exception &e) {
		snprintf(error, size, "%s", e.what());
		return -1;
	}
	return 0;
}

// Off, the callback is disabled in torch too: RecordFunction then costs
// what it costs with no observer (no inputs copied).
void enable(bool on)
{
	enabled.store(on);
	if (on)
		at::reenableCallback(callback);
	else
		at::disableCallback(callback);
}

uint64_t name_tensor(uintptr_t impl, const char *name)
{
	if (!impl)
		return 0;
	std::lock_guard<std::mutex> guard(ids_lock);
	tensor_entry &e = entry_for(reinterpret_cast<c10::TensorImpl *>(impl));
	// A parameter seen before its module ran has a "(made ...)" label.
	if (!e.name || e.name[0] == '(')
		e.name = intern(name);
	return e.id;
}

uint64_t tensor_id(uintptr_t impl, const char **name)
{
	*name = nullptr;
	if (!impl)
		return 0;
	std::lock_guard<std::mutex> guard(ids_lock);
	uint64_t first_new = next_id;
	tensor_entry &e = entry_for(reinterpret_cast<c10::TensorImpl *>(impl));
	if (e.id >= first_new)
		e.name = made_elsewhere;
	*name = e.name;
	return e.id;
}

const char *tensor_name(uintptr_t impl)
{
	if (!impl)
		return nullptr;
	std::lock_guard<std::mutex> guard(ids_lock);
	auto it = ids.find(reinterpret_cast<c10::TensorImpl *>(impl));
	return it != ids.end() && !it->second.weak.expired() ? it->second.name
							     : nullptr;
}

// ------------------------------------------------ value checks on a GPU
//
// A device tensor cannot be read where its op ends without a sync per op.
// So its check is reduced there, on the op's stream, into statistics that
// stay on the device until cuda_collect copies them to the host at once
// (one sync per step).  Reducing where the op ends keeps the values the op
// made (a later in-place write cannot change them) and holds no tensor of
// the program.
//
// The CUDA module reduces a dense f32, f16 or bf16 tensor in one launch
// (obs_events.value_stats): a result's inf and NaN, counted, and the
// largest finite |x| of its arguments; a cast source's verdict counts.
// Where it cannot (no module loaded, another dtype or layout, a torch
// without stream handles), torch's ops reduce: a result's smallest and
// largest element (NaN wins in aminmax, as in torch.max) say whether it
// holds inf or NaN, in one kernel, not how many (obs_reduction.counted);
// a cast source's counts take some fifteen kernels.  A tensor is reduced
// once per step until it is written: a layer's output is the next
// layer's argument, a weight is read by every op of its layer.  The tests
// run both paths on host tensors (AMPTRACE_TEST_QUEUED_VALUES).

// Where a tensor's statistics are read at the step's end: the module's
// row on `device`, or (row -1) torch's numbers on it, a result's extremes
// or a cast source's raw counts.
struct stats_slot {
	c10::Device device;
	int64_t row;
	at::Tensor min, max;
	at::Tensor cast_raw;
};

// A tensor reduced this step: its slot, while unwritten.  The weak
// reference keeps its address from being reused by another tensor.
struct reduced_tensor {
	c10::weak_intrusive_ptr<c10::TensorImpl> weak;
	int64_t version;
	size_t slot;
};

// A queued check: a result's (the slots of the result and of the
// arguments, -1 for an empty argument) or a cast's (the slot of its
// source).  Its subject is never empty (cuda_queue).
struct queued_check {
	uint64_t tag;
	enum obs_reduce what;
	int64_t subject;
	std::vector<int64_t> arguments;
};

// A slot as read; `counted`: inf and nan are counts, not 0/1 flags.
struct read_stats {
	amp_value_stats s;
	bool counted;
};

constexpr int64_t cast_raw_size = 7;

std::mutex queued_lock;
std::vector<stats_slot> slots;
std::unordered_map<const c10::TensorImpl *, reduced_tensor> reduced;
std::vector<queued_check> queued;
std::vector<c10::Stream> streams; // that reduced something this step

int64_t version_of(const at::Tensor &t)
{
	return t.is_inference() ? -1 : (int64_t)t._version();
}

c10::Stream current_stream(const c10::Device &device)
{
	return c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
}

// The stream t's reduction runs on (the op's), noted for cuda_collect.
void note_stream(const at::Tensor &t)
{
	c10::Stream s = current_stream(t.device());
	if (std::find(streams.begin(), streams.end(), s) == streams.end())
		streams.push_back(s);
}

// The module's device number and cudaStream_t for `device`'s current
// stream (-1 and none: the host); false where torch cannot say.
bool module_place(const c10::Device &device, int *index, void **stream)
{
	*index = -1;
	*stream = nullptr;
	if (queue_host_values == host_values_torch)
		return false;
	if (device.is_cpu())
		return queue_host_values == host_values_module;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
	if (!device.is_cuda())
		return false;
	*index = device.index();
	*stream = current_stream(device).native_handle();
	return true;
#else
	return false;
#endif
}

// The module's row of t's statistics against `limits`, or -1 where it
// cannot reduce t.
int64_t module_row(const at::Tensor &t, const amp_value_limits &limits)
{
	int device;
	void *stream;
	int64_t row;
	if (!t.is_non_overlapping_and_dense() ||
	    !module_place(t.device(), &device, &stream) ||
	    events->value_stats(t.data_ptr(), dtype_of(t.scalar_type()),
				t.numel(), &limits, device, stream, &row) != 0)
		return -1;
	return row;
}

// What a cast's verdict needs of its source's |x|, finite ones only:
// [>= overflow, > 0, >= tiny, > zero point, sum of those < tiny, sum,
// max], as amp_value_stats counts them.
at::Tensor cast_raw_counts(const at::Tensor &source, const amp_value_limits &l)
{
	at::Tensor f = source.abs().nan_to_num(0.0, 0.0, 0.0);
	at::Tensor normal = f.ge(l.tiny);
	return at::stack({ f.ge(l.overflow).sum(at::kDouble),
			   f.gt(0).sum(at::kDouble),
			   normal.sum(at::kDouble),
			   f.gt(l.zero).sum(at::kDouble),
			   f.mul(normal.logical_not()).sum(at::kDouble),
			   f.sum(at::kDouble),
			   f.amax().to(at::kDouble) });
}

// A new slot holding t's statistics (a cast source's when limits.cast).
// queued_lock held.
size_t new_slot(const at::Tensor &t, const amp_value_limits &limits)
{
	stats_slot s{ t.device(), module_row(t, limits), {}, {}, {} };
	if (s.row < 0 && limits.cast) {
		s.cast_raw = cast_raw_counts(t, limits);
	} else if (s.row < 0) {
		try {
			std::tie(s.min, s.max) = at::aminmax(t);
		} catch (const std::exception &) {
			s.min = t.amin(); // no half aminmax on torch 1.13's CPU
			s.max = t.amax();
		}
	}
	slots.push_back(std::move(s));
	return slots.size() - 1;
}

// The slot of t's statistics as a result or argument, reducing it unless
// this step did; -1 for an empty tensor (nothing to read).  queued_lock
// held.
int64_t slot_of(const at::Tensor &t)
{
	if (!t.numel())
		return -1;
	c10::TensorImpl *impl = t.unsafeGetTensorImpl();
	int64_t version = version_of(t);
	auto it = reduced.find(impl);
	if (it != reduced.end() && version >= 0 &&
	    it->second.version == version)
		return (int64_t)it->second.slot;
	size_t slot = new_slot(t, amp_value_limits{ 0.0f, 0.0f, 0.0f, 0 });
	reduced.insert_or_assign(
		impl, reduced_tensor{ c10::weak_intrusive_ptr<c10::TensorImpl>(
					      t.getIntrusivePtr()),
				      version, slot });
	return (int64_t)slot;
}

// Our reductions are no ops of the program: unobserved, outside autograd
// and autocast.
struct unobserved_work {
	at::RecordFunctionGuard unobserved{ false };
	at::NoGradGuard no_grad;
	c10::impl::ExcludeDispatchKeyGuard no_autocast{
		c10::autocast_dispatch_keyset
	};
};

// What the device's reductions read: plain tensors of the dtypes the
// host checks read (not float8).
bool readable_on_device(const at::Tensor &t)
{
	if (!t.defined() || !plain_tensor(t.unsafeGetTensorImpl()))
		return false;
	at::ScalarType s = t.scalar_type();
	return s == at::kHalf || s == at::kBFloat16 || s == at::kFloat ||
	       s == at::kDouble;
}

bool cuda_queue(enum obs_reduce what, int index,
		const struct amp_value_limits *limits, uint64_t tag)
{
	thread_cache &tc = cache_for_thread();
	frame_context *frame = tc.ending;
	if (!frame)
		return false;
	const std::vector<at::Tensor> &tensors =
		what == OBS_REDUCE_RESULT ? tc.ending_results : frame->device_args;
	if (what == OBS_REDUCE_CAST_SOURCE)
		index = 0;
	if (index < 0 || index >= (int)tensors.size() ||
	    !readable_on_device(tensors[index]) || !tensors[index].numel())
		return false;
	const at::Tensor &subject = tensors[index];
	unobserved_work guards;
	try {
		queued_check c{ tag, what, -1, {} };
		std::lock_guard<std::mutex> guard(queued_lock);
		note_stream(subject);
		if (what == OBS_REDUCE_CAST_SOURCE) {
			c.subject = (int64_t)new_slot(subject, *limits);
		} else {
			c.subject = slot_of(subject);
			for (const at::Tensor &a : frame->device_args)
				if (readable_on_device(a) &&
				    a.device() == subject.device())
					c.arguments.push_back(slot_of(a));
		}
		queued.push_back(std::move(c));
	} catch (const std::exception &) {
		return false;
	}
	return true;
}

// A result's extremes as torch read them: NaN wins, then inf; the
// largest finite |x| when neither.
read_stats extremes_stats(double min, double max)
{
	read_stats r{ {}, false };
	amp_value_stats_init(&r.s);
	r.s.nan = std::isnan(min) || std::isnan(max);
	r.s.inf = !r.s.nan && (std::isinf(min) || std::isinf(max));
	if (!r.s.nan && !r.s.inf)
		r.s.max_abs = std::max(std::fabs(min), std::fabs(max));
	return r;
}

read_stats cast_raw_stats(const double *raw)
{
	read_stats r{ {}, true };
	amp_value_stats_init(&r.s);
	r.s.overflowed = raw[0];
	r.s.nonzero = raw[1];
	r.s.normal = raw[2];
	r.s.above_zero = raw[3];
	r.s.flushed_sum = raw[4];
	r.s.sum = raw[5];
	r.s.max_abs = raw[6];
	return r;
}

struct obs_reduction result_reduction(const queued_check &c,
				      const std::vector<read_stats> &read)
{
	struct obs_reduction r = {};
	r.what = OBS_REDUCE_RESULT;
	const read_stats &result = read[c.subject];
	r.inf = (int64_t)result.s.inf;
	r.nan = (int64_t)result.s.nan;
	r.counted = result.counted;
	for (int64_t a : c.arguments) {
		if (a < 0)
			continue;
		const amp_value_stats &s = read[a].s;
		r.arguments_non_finite += s.nan || s.inf;
		r.arguments_max_abs = std::max(r.arguments_max_abs, s.max_abs);
	}
	return r;
}

struct obs_reduction cast_reduction(const amp_value_stats &s)
{
	struct obs_reduction r = {};
	r.what = OBS_REDUCE_CAST_SOURCE;
	r.source = s;
	return r;
}

// The streams that reduced something are waited for on the current
// ones, which read the numbers.
void wait_for_streams()
{
	for (const c10::Stream &s : streams) {
		if (s.device_type() == c10::DeviceType::CPU)
			continue;
		c10::Stream current = current_stream(s.device());
		if (s != current) {
			c10::Event made(s.device_type());
			made.record(s);
			made.block(current);
		}
	}
}

// The module's rows of `device`, in one copy; false when they are lost.
bool read_module_rows(const c10::Device &device, std::vector<read_stats> &out)
{
	int64_t count = 0;
	for (const stats_slot &s : slots)
		if (s.device == device && s.row >= count)
			count = s.row + 1;
	int index;
	void *stream;
	if (!count || !module_place(device, &index, &stream))
		return true;
	std::vector<amp_value_stats> rows((size_t)count);
	if (events->value_stats_read(index, stream, rows.data(), count) != 0)
		return false;
	for (size_t i = 0; i < slots.size(); i++)
		if (slots[i].device == device && slots[i].row >= 0)
			out[i] = read_stats{ rows[(size_t)slots[i].row], true };
	return true;
}

// torch's numbers on `device`, stacked there and copied at once.
void read_torch_numbers(const c10::Device &device, std::vector<read_stats> &out)
{
	std::map<at::ScalarType, std::vector<size_t>> extremes_by_dtype;
	std::vector<size_t> casts;
	std::vector<at::Tensor> raw;
	for (size_t i = 0; i < slots.size(); i++) {
		const stats_slot &s = slots[i];
		if (s.device != device || s.row >= 0)
			continue;
		if (s.cast_raw.defined()) {
			casts.push_back(i);
			raw.push_back(s.cast_raw);
		} else {
			extremes_by_dtype[s.min.scalar_type()].push_back(i);
		}
	}
	std::vector<at::Tensor> parts;
	std::vector<size_t> extremes;
	for (const auto &dtype : extremes_by_dtype) {
		std::vector<at::Tensor> min, max;
		for (size_t i : dtype.second) {
			min.push_back(slots[i].min);
			max.push_back(slots[i].max);
			extremes.push_back(i);
		}
		parts.push_back(at::stack({ at::stack(min), at::stack(max) }, 1)
					.to(at::kDouble)
					.reshape(-1));
	}
	if (!raw.empty())
		parts.push_back(at::cat(raw));
	if (parts.empty())
		return;
	at::Tensor host = at::cat(parts).cpu().contiguous();
	const double *v = host.data_ptr<double>();
	for (size_t i : extremes) {
		out[i] = extremes_stats(v[0], v[1]);
		v += 2;
	}
	for (size_t i : casts) {
		out[i] = cast_raw_stats(v);
		v += cast_raw_size;
	}
}

// This step's slots, read from each device that made some; false on a
// device error: these are lost, the program's own next call on the
// device reports it.  queued_lock held.
bool read_all(std::vector<read_stats> &out)
{
	out.assign(slots.size(), read_stats{ {}, false });
	std::vector<c10::Device> devices;
	for (const stats_slot &s : slots)
		if (std::find(devices.begin(), devices.end(), s.device) ==
		    devices.end())
			devices.push_back(s.device);
	bool read = true;
	try {
		wait_for_streams();
		for (const c10::Device &d : devices) {
			read = read_module_rows(d, out) && read;
			read_torch_numbers(d, out);
		}
	} catch (const std::exception &) {
		return false;
	}
	return read;
}

// Every check queued this step, read from the devices (a copy or two
// each), judged in the order they were queued.
void cuda_collect(void (*deliver)(uint64_t tag, const struct obs_reduction *r))
{
	unobserved_work guards;
	std::vector<queued_check> checks;
	std::vector<read_stats> numbers;
	bool read;
	{
		std::lock_guard<std::mutex> guard(queued_lock);
		read = read_all(numbers);
		checks.swap(queued);
		slots.clear();
		reduced.clear();
		streams.clear();
	}
	if (!read)
		return;
	for (const queued_check &c : checks) {
		struct obs_reduction r;
		if (c.what == OBS_REDUCE_RESULT)
			r = result_reduction(c, numbers);
		else
			r = cast_reduction(numbers[c.subject].s);
		deliver(c.tag, &r);
	}
}

} // namespace

extern "C" __attribute__((visibility("default"))) int
amptrace_observer_bind(unsigned abi, const struct obs_events *table,
		       struct obs_observer *observer)
{
	if (abi != OBS_ABI_VERSION)
		return -1;
	events = table;
	const char *queued = getenv("AMPTRACE_TEST_QUEUED_VALUES");
	queue_host_values = !queued		  ? host_values_read
			    : !strcmp(queued, "1")     ? host_values_module
			    : !strcmp(queued, "torch") ? host_values_torch
						       : host_values_read;
	*observer = obs_observer{ install,     enable,	   name_tensor,
				  tensor_name, cuda_queue, cuda_collect,
				  tensor_id };
	return 0;
}
