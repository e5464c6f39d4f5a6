//===- Graph.cpp - Captured CUDA graphs and their executable form ---------===//

#include "runtime/cuda/Graph.h"

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/Stream.h"

#include <utility>

namespace sol::cuda {

Graph::~Graph() { reset(); }

Graph::Graph(Graph &&other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)) {}

Graph &Graph::operator=(Graph &&other) noexcept {
  if (this != &other) {
    reset();
    graph_ = std::exchange(other.graph_, nullptr);
  }
  return *this;
}

void Graph::reset() noexcept {
  if (graph_ != nullptr)
    driverApi().graphDestroy(graph_);
  graph_ = nullptr;
}

GraphExec Graph::instantiate() const {
  CUgraphExec exec = nullptr;
  checkCuda(driverApi().graphInstantiate(&exec, graph_, 0),
            "cuGraphInstantiate");
  return GraphExec(exec);
}

GraphExec::~GraphExec() { reset(); }

GraphExec::GraphExec(GraphExec &&other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)) {}

GraphExec &GraphExec::operator=(GraphExec &&other) noexcept {
  if (this != &other) {
    reset();
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

void GraphExec::reset() noexcept {
  if (exec_ != nullptr)
    driverApi().graphExecDestroy(exec_);
  exec_ = nullptr;
}

void GraphExec::launch(const Stream &stream) const {
  checkCuda(driverApi().graphLaunch(exec_, stream.handle()), "cuGraphLaunch");
}

} // namespace sol::cuda
