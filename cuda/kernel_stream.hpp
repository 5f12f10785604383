// kernel_stream: one device's in-order stream of kernels and copies, with the device memory it
// hands out (the seed's KernelStream). A cpu/sim stream runs each call at once on the calling
// thread; a CUDA stream enqueues it and finishes by synchronize(). Every call throws ag::error
// (cuda_error on CUDA) naming what failed.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "actorgraph/device.hpp"
#include "cuda/elementwise_call.hpp"
#include "cuda/row_call.hpp"
#include "graph/op.hpp"
#include "graph/philox.hpp"

namespace ag {

class kernel_stream;

// Steps as graphs (graph_option::cuda_graphs): a call a step's operator made on a stream, recorded
// rather than run (cuda/recording_stream.hpp); op: that operator's place in its batch; host: it
// copies from or to host memory (the store), whose ranges change from one run of a step to the
// next: such calls run as they are, between the graphs of the calls around them.
struct recorded_call {
  struct fill_args {
    dtype t;
    void* out;
    std::size_t count;
    double value;
  };
  struct random_args {
    random_kind kind;
    float* out;
    std::size_t count;
    uint64_t seed, first;
    float a, b;
  };
  struct sum_args {
    const float* a;
    float* out;
    std::size_t count;
  };
  struct copy_args {
    void* dst;
    bool dst_on_host;
    const void* src;
    bool src_on_host;
    std::size_t bytes;
  };
  struct copy_peer_args {
    void* dst;
    const void* src;
    ag::device from;
    std::size_t bytes;
  };
  struct sum_peers_args {
    float* out;
    std::vector<const float*> parts;
    std::vector<ag::device> from;
    std::size_t count;
  };
  // A variant, not a std::function: a step's calls are kept in a vector reused from step to step,
  // without an allocation per call.
  using args = std::variant<fill_args, elementwise_call, row_call, random_args, sum_args,
                            matmul_call, copy_args, copy_peer_args, sum_peers_args>;

  std::size_t op = 0;
  args call;
  bool host = false;

  // Makes the call on s (cuda/recording_stream.cpp).
  void run(kernel_stream& s) const;
};

// What a stream made of a step's recorded calls to launch them as one: a CUDA graph, or on a cpu
// or sim stream the calls themselves.
class stream_graph {
public:
  virtual ~stream_graph() = default;
  virtual std::size_t nodes() const noexcept = 0;
};

// How capture() gave a step its graph: a new one, or the one it had, updated in place.
enum class capture_outcome { instantiated, updated };

class kernel_stream {
public:
  virtual ~kernel_stream() = default;

  virtual ag::device device() const noexcept = 0;

  // Device memory for one operand; no driver allocation per call on CUDA (a caching allocator).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) noexcept = 0;
  // The runner leaves a block it holds to the stream, which frees it when it goes
  // (naive_runner::abandon). Nothing to do by default: a CUDA stream's allocator frees every block
  // it handed out.
  virtual void leave(void* ptr, std::size_t bytes) noexcept { (void)ptr, (void)bytes; }
  // While held, memory deallocated stays this stream's (a step's calls being recorded may still
  // read it); a cpu or sim stream gives back what it would have once released. Nothing to do on
  // CUDA, whose cache never gives memory back while the stream lives.
  virtual void hold_frees(bool hold) noexcept { (void)hold; }

  // count elements of t at out, each `value` (converted as fill_bits() says).
  virtual void fill(dtype t, void* out, std::size_t count, double value) = 0;
  // One elementwise operator (cuda/elementwise_call.hpp).
  virtual void elementwise(const elementwise_call& call) = 0;
  // One operator of the reduction, rows, index or random families (cuda/row_call.hpp). An index
  // out of range: ag::error on a cpu or sim stream (which runs it at once); a NaN result on CUDA.
  virtual void rows(const row_call& call) = 0;
  // out[i] = element first + i of the random stream of `seed` (graph/philox.hpp): uniform in
  // [a, b), or normal with mean a and standard deviation b. The same bits on every device kind.
  virtual void random(random_kind kind, float* out, std::size_t count, uint64_t seed,
                      uint64_t first, float a, float b) = 0;
  virtual void sum(const float* a, float* out, std::size_t count) = 0;
  // A batch of matrix products (cuda/matmul_call.hpp): cuBLAS on CUDA.
  virtual void matmul(const matmul_call& call) = 0;
  // bytes from src to dst; each side is host memory (the tensor store) or this device's memory.
  virtual void copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
                    std::size_t bytes) = 0;

  // Direct transfers (graph/op.hpp, peer_copy and peer_sum): memory of a peer device of this
  // process, read where it lies. copy_peer: bytes from src, memory of device `from`. sum_peers:
  // out[i] = parts[0][i] + parts[1][i] + ... in that order, for n_parts <= max_peer_parts arrays
  // (this device's or peers'). CUDA enables peer access to `from` on first use; a pair of GPUs
  // without it copies through the driver, and a sum reading one fails naming both.
  static constexpr std::size_t max_peer_parts = 16;
  virtual void copy_peer(void* dst, const void* src, const ag::device& from, std::size_t bytes) = 0;
  virtual void sum_peers(float* out, const float* const* parts, const ag::device* from,
                         std::size_t n_parts, std::size_t count) = 0;

  // Across child processes (CUDA IPC). export_memory: the memory handle of the allocation that
  // holds ptr (memory this stream handed out), and ptr's offset in it; it also records this
  // stream's interprocess event after everything enqueued so far, and gives its handle.
  // import_memory: another process's exported allocation, mapped into this one once and kept (as
  // lane `lane`'s) until forget_imports(lane) or the stream's end; the operand is at the offset
  // from it. wait_export: what this stream enqueues next waits for the exporter's event (opened
  // once and kept likewise) as it was last recorded. A cpu or sim stream throws: its memory is its
  // process's own.
  virtual uint64_t export_memory(const void* ptr, char (&handle)[64], char (&event)[64]);
  virtual const void* import_memory(const char (&handle)[64], uint32_t lane);
  virtual void wait_export(const char (&event)[64], uint32_t lane);
  virtual void forget_imports(uint32_t lane) noexcept { (void)lane; }

  // Between lanes of one process (thread mode): record_local records this stream's event after
  // everything enqueued so far and names it in `event`; wait_local makes what this stream enqueues
  // next wait for such an event of another stream of this process, as it was last recorded. A cpu
  // or sim stream has run everything already: neither does anything.
  virtual void record_local(char (&event)[64]) { (void)event; }
  virtual void wait_local(const char (&event)[64]) { (void)event; }

  // Makes host memory (the tensor store) fast to copy from and to: on CUDA, copies pin
  // (cudaHostRegister) each 64 MiB chunk of it they touch, the first time.
  virtual void register_host(void* base, std::size_t bytes) { (void)base, (void)bytes; }
  virtual void unregister_host(void* base) noexcept { (void)base; }

  // Waits until every call made so far has finished; throws the first asynchronous failure.
  virtual void synchronize() = 0;

  // Steps as graphs. capture: makes `calls` (recorded on this stream, in order) one graph,
  // updating `graph` in place when it holds one the calls fit (CUDA: cudaGraphExecUpdate, the
  // same kernels with other arguments), else replacing it; nothing runs. Throws ag::error when
  // the calls cannot be captured (graph is then unchanged). launch: runs a graph after what was
  // enqueued before. A cpu or sim stream keeps the calls and runs them in order; a call that
  // throws there (an index out of range) throws from launch as graph_call_error.
  virtual capture_outcome capture(const std::vector<recorded_call>& calls,
                                  std::unique_ptr<stream_graph>& graph);
  virtual void launch(stream_graph& graph);
};

// A call of a graph of a cpu or sim stream failed: `op` is its operator's place in its batch.
struct graph_call_error : std::runtime_error {
  graph_call_error(std::size_t op, const std::string& what) : std::runtime_error(what), op(op) {}
  std::size_t op;
};

// The stream of a cpu or sim device: the CPU reference kernels, run at once.
std::unique_ptr<kernel_stream> make_cpu_stream(const ag::device& d);

// The stream of cuda:N: binds the calling thread to GPU N. Throws ag::error when this build has
// no CUDA backend or the device cannot be used.
std::unique_ptr<kernel_stream> make_cuda_stream(int index);

// CUDA GPUs visible to this process; 0 without a driver, a GPU or a CUDA build. With
// AG_CUDA_ORDINALS set ("0,0": a list of GPU ordinals), cuda:N runs on the GPU at entry N of the
// list, and the list's length is the count: several lanes may share one GPU (their transfers are
// then copies within it). An entry that is no visible GPU makes the count 0.
int cuda_device_count() noexcept;

// The GPU that cuda:N runs on (N itself without AG_CUDA_ORDINALS).
int cuda_ordinal(int index) noexcept;

// Makes another library's CUDA stream `consumer` (a cudaStream_t as an integer; 1: the legacy
// default stream, 2: the per-thread one) wait for `event`, as an export of a lane of this process
// names it (record_local): what it runs next reads the exported operand after its writer.
// ag::error when CUDA fails, or in a build without CUDA.
void cuda_stream_wait(std::intptr_t consumer, const char (&event)[64]);

// True when cuda:a can read cuda:b's memory directly (the same GPU, or peer access between them).
bool cuda_peer_access(int a, int b) noexcept;

// The stream for any device: cpu and sim -> CPU kernels, cuda -> CUDA.
std::unique_ptr<kernel_stream> make_stream(const ag::device& d);

} // namespace ag
