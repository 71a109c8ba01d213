// The two-level layout of a communicator (algorithm=two_level): which of
// its ranks share a node, and the node and rail sub-communicators the
// two-level schedule runs on (engine/schedules/two_level.cc), made once per
// communicator context and freed with it.
//
// Nodes: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on the communicator, or,
// where TERSE_NODE_KEY is set, the ranks whose keys are equal (as text).
// Either every rank of the communicator sets a key or none does.
//
// Shards and rails: every node cuts the data into `shards` shards, the
// smallest node's rank count, so that every rail spans every node.  Local
// rank l < shards holds shard l and is on rail l (the ranks of every node
// with local index l, ordered by communicator rank); ranks of larger nodes
// with l >= shards take part in the node collectives only.  With nodes of
// 3 and 2 ranks: two shards, rails {0,3} and {1,4} (communicator ranks of
// nodes {0,1,2} and {3,4}), rank 2 on no rail.
#pragma once

#include "config/config.h"
#include "engine/engine.h"
#include "engine/ports.h"
#include "util/status.h"

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

namespace terse {

// A communicator terse made, freed with its owner.
class OwnedComm {
public:
    OwnedComm() = default;
    ~OwnedComm();
    OwnedComm(const OwnedComm &) = delete;
    OwnedComm &operator=(const OwnedComm &) = delete;
    MPI_Comm get() const { return comm_; }
    MPI_Comm *out() { return &comm_; }

private:
    MPI_Comm comm_ = MPI_COMM_NULL;
};

class NodeLayout {
public:
    // Collective over comm (every rank, in the same call).  node_key: this
    // rank's TERSE_NODE_KEY, empty when unset.  what: the communicator, for
    // messages ("'name' of size N").  Errors are the same on every rank.
    // only_if_two_level_fits: make no communicator, and leave *out null,
    // where the keys (or, without keys, the ranks' host names) already show
    // one node or a node of one rank.  Making a communicator starts Open
    // MPI's non-blocking agreement of its context id on comm, which keeps
    // the MPI library polling its non-blocking component for comm's life
    // (engine/link_agreement.h); a layout the planner would drop is not
    // worth that.  Host names stand in for the shared-memory split here
    // only: a layout that is made still splits by shared memory.
    static Status make(MPI_Comm comm, const std::string &node_key, const std::string &what,
                       bool only_if_two_level_fits, std::unique_ptr<NodeLayout> *out);
    NodeLayout(const NodeLayout &) = delete;
    NodeLayout &operator=(const NodeLayout &) = delete;

    // The layout as the engine sees it; its rail_config follows cfg (the
    // communicator's agreed configuration, with algorithm auto).
    const TwoLevelEnv *env() const { return &env_; }
    void set_config(const CommConfig &cfg);
    // Ranks of the largest node (env() has this rank's node's).
    int ranks_per_node_max() const { return ranks_per_node_max_; }
    // "2 nodes of 3..2 ranks, 2 shards; this rank: node rank 1, rail rank 0 of 2"
    std::string describe() const;

private:
    NodeLayout() = default;

    OwnedComm node_, rail_;
    int ranks_per_node_max_ = 1;
    std::vector<int> rail_world_;  // rail rank -> MPI_COMM_WORLD rank
    // Declared after what they point to.
    std::unique_ptr<Control> node_control_, rail_control_;
    std::unique_ptr<Link> rail_link_;
    CommConfig rail_config_;
    TwoLevelEnv env_;
};

}  // namespace terse
