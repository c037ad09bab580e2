// The floor of bench_torch.py: a global RecordFunction callback that asks
// for every op's inputs and outputs, as the bridge's observer does, and
// does nothing with them.  What torch spends to hand them over is the
// least any such observer costs; the bridge's own share is what its
// traced run costs above this.  floor_install() adds it (call it once,
// after torch is loaded: the bench loads this library with ctypes).
#include <ATen/record_function.h>

namespace {

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn)
{
	(void)fn.inputs();
	return nullptr;
}

void on_end(const at::RecordFunction &fn, at::ObserverContext *)
{
	(void)fn.outputs();
}

} // namespace

extern "C" __attribute__((visibility("default"))) void floor_install(void)
{
	at::addGlobalCallback(
		at::RecordFunctionCallback(on_start, on_end)
			.needsInputs(true)
			.needsOutputs(true)
			.scopes({ at::RecordScope::FUNCTION,
				  at::RecordScope::BACKWARD_FUNCTION }));
}
