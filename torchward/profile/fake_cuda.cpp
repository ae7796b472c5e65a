// A no-op CUDA device for fake-tensor calibration on a CPU-only torch wheel.
//
// A CPU build of torch can create FakeTensors on device "cuda", but autograd, autocast and
// the optimizers ask the device guard / the CUDA hooks about the device and abort ("not
// linked with support for cuda devices", "Cannot access accelerator device when none is
// available"). This registers torch's own no-op c10::impl::FakeGuardImpl for the CUDA
// device type and a CUDA-hooks object that reports one device. No CUDA call is ever made;
// every tensor on the device must be a FakeTensor (real storage would be allocated by
// nobody). Built by torchward/profile/fakecuda.py with g++ against the wheel's headers and
// loaded *before* `import torch` (torch caches the accelerator at import time).
//
// A CUDA build of torch on a machine without a GPU registers its own CUDA hooks and guard,
// which answer "no device" and abort autograd on fake CUDA tensors. The hooks here are
// registered with the preferred priority, so the CUDA build's own (default priority, loaded
// later with torch) are skipped; its guard, registered when torch loads, is replaced by
// calling torchward_install_fake_guard() after `import torch`.
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/FakeGuardImpl.h>

C10_REGISTER_GUARD_IMPL(CUDA, c10::impl::FakeGuardImpl<c10::DeviceType::CUDA>);

extern "C" void torchward_install_fake_guard() {
  static c10::impl::FakeGuardImpl<c10::DeviceType::CUDA> guard;
  c10::impl::device_guard_impl_registry[static_cast<size_t>(c10::DeviceType::CUDA)].store(&guard);
}

namespace {
struct FakeCUDAHooks : at::CUDAHooksInterface {
  explicit FakeCUDAHooks(at::CUDAHooksArgs) {}
  bool hasCUDA() const override { return true; }
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return 1; }
  int getNumGPUs() const override { return 1; }
  c10::DeviceIndex current_device() const override { return 0; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  void setCurrentDevice(c10::DeviceIndex) const override {}
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex) const override { return 0; }
};
}  // namespace

namespace at {
C10_REGISTER_TYPED_CLASS_WITH_PRIORITY(
    CUDAHooksRegistry, "CUDAHooks", c10::REGISTRY_PREFERRED, FakeCUDAHooks);
}
