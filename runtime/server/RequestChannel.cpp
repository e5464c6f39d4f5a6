//===- RequestChannel.cpp - Engine outputs of one HTTP request ------------===//
#include "runtime/server/RequestChannel.h"

namespace sol {

void RequestChannel::accept() {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::Accepted;
  ready_.notify_all();
}

void RequestChannel::reject(std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = State::Rejected;
  rejection_ = std::move(message);
  ready_.notify_all();
}

void RequestChannel::push(int32_t index, RequestOutput output) {
  std::lock_guard<std::mutex> lock(mutex_);
  items_.push_back({index, std::move(output), {}});
  ready_.notify_all();
}

void RequestChannel::pushQuiet(int32_t index, RequestOutput output) {
  std::lock_guard<std::mutex> lock(mutex_);
  items_.push_back({index, std::move(output), {}});
}

void RequestChannel::notify() {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_.notify_all();
}

void RequestChannel::fail(int32_t index, std::string error) {
  std::lock_guard<std::mutex> lock(mutex_);
  Item item;
  item.index = index;
  item.output.finished = true;
  item.output.finishReason = FinishReason::Abort;
  item.error = std::move(error);
  items_.push_back(std::move(item));
  ready_.notify_all();
}

RequestChannel::State
RequestChannel::waitSettled(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return state_ != State::Pending; });
  return state_;
}

bool RequestChannel::take(std::vector<Item> &out,
                          std::chrono::milliseconds timeout) {
  out.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !items_.empty(); }))
    return false;
  out.assign(std::make_move_iterator(items_.begin()),
             std::make_move_iterator(items_.end()));
  items_.clear();
  return true;
}

} // namespace sol
