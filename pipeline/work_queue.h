#pragma once
// The catalog as a work queue (`tandem tag --queue`): any number of `tag`
// processes on any machines, started in any order (Slurm job arrays,
// Kubernetes Indexed Jobs, mpirun, by hand), point at one catalog and one
// set of roots and share the run. Each lists the roots and enqueues what
// the catalog does not have yet (idempotently: a file is one row however
// many workers list it), then claims files in batches under a lease that
// it renews while it works. A worker that dies (SIGKILL, a lost machine)
// stops renewing; when its leases run out, others claim its files. A file
// is done when the catalog transaction that stores its result commits, so
// every file is stored once, whoever tags it. The run ends for a worker
// when nothing is left to claim and no other worker holds a live lease.
//
// On PostgreSQL claims skip rows other workers hold (SELECT ... FOR UPDATE
// SKIP LOCKED), so workers never wait for each other's claims; on SQLite
// the catalog's write lock orders them. Times are the workers' clocks in
// ms since the epoch: machines sharing a queue need synchronized clocks
// (NTP), to well within a lease.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/sql.h"
#include "pipeline/tagger.h"

namespace tandem::pipeline {

struct QueueCounts {
  int64_t total = 0, done = 0, leased = 0;  // leased: under a live lease
  int64_t expired = 0;                      // claimed, not done, lease run out (a dead worker's)
};

struct WorkerStatus {
  std::string id;       // host:pid:start
  int64_t files = 0;    // stored by it
  double seconds = 0;   // from its start to its last renewal
  double idle_s = 0;    // since its last renewal (large: stopped or dead)
  int64_t leased = 0;   // files it holds now
};

class WorkQueue {
 public:
  // Opens the queue of `model_id` in `catalog` (a Catalog opened it first:
  // the schema is there). `lease_s`: how long a claim lasts unrenewed.
  // `reconnect`: what a lost connection does to the queue's calls (they
  // reconnect and run again; renewals give up after a third of a lease and
  // try again at the next).
  WorkQueue(const std::string& catalog, std::string model_id, double lease_s = 60, sql::Reconnect reconnect = {0, {}});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // This worker's name in the queue: host:pid:start time.
  const std::string& worker() const { return worker_; }

  // Adds the files (listed and not up to date in the catalog) to the queue;
  // a file already queued stays as it is unless it changed since it was
  // done. Returns how many were new or re-opened.
  int64_t enqueue(const std::vector<InputFile>& files);
  // Up to `n` files no live lease holds, leased to this worker, in queue
  // order. The worker may still hold files of earlier claims.
  std::vector<InputFile> claim(int n);
  // Whether every file is done or held by a live lease of another worker
  // (then wait_s() says how long until the first of those runs out).
  bool finished();
  double wait_s();

  // Starts renewing this worker's leases every lease/3 on a thread (and
  // records it in the workers table); stop() ends that.
  void start_renewing();
  void stop();

 private:
  void renew();
  void renew_once();
  // Whether PostgreSQL transaction `transaction` committed (a claim whose
  // answer the connection lost).
  bool committed(int64_t transaction);
  int64_t now_ms() const;

  std::unique_ptr<sql::Database> db_;
  std::mutex db_mutex_;  // claims (the tag thread) and renewals share the connection
  std::string model_id_, worker_;
  int64_t lease_ms_;
  sql::Reconnect reconnect_;
  std::thread renewer_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

// The queue's tables, in the catalog's schema version 6: `work`, a row per
// (model, path) to tag, claimed by a worker (owner) until its lease runs
// out (ms since the epoch), done when its result commits (done_by: who
// stored it); `workers`, those that took part, last seen when they
// renewed. One text for both databases, their integer types aside.
std::string work_queue_schema(sql::Dialect dialect);

// What `tandem status CATALOG` shows: per model, the queue's counts and its
// workers.
struct QueueStatus {
  std::string model_id;
  QueueCounts counts;
  std::vector<WorkerStatus> workers;
};
std::vector<QueueStatus> queue_status(const std::string& catalog);

}  // namespace tandem::pipeline
