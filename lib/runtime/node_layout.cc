// Finding the nodes of a communicator and making its node and rail
// sub-communicators (node_layout.h).
#include "runtime/node_layout.h"

#include "runtime/engine_ports.h"
#include "runtime/transport_mpi.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace terse {

OwnedComm::~OwnedComm() {
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) PMPI_Comm_free(&comm_);
}

namespace {

// One rank's key as it travels in the allgather: the FNV-1a hash of its
// host name, the set flag, then the text.
struct KeyCell {
    uint64_t host;
    char set;
    char text[71];
};
static_assert(sizeof(KeyCell) == 80, "a key cell is 80 bytes, sent as MPI_CHAR");

// How the ranks group into nodes: the keys, or the host names without.
struct NodeGuess {
    int nodes = 0;
    int smallest = 0;  // ranks of the smallest node
};

NodeGuess guess_nodes(const std::vector<KeyCell> &cells, int size) {
    const bool keyed = cells[0].set != 0;
    auto less = [&](int a, int b) {
        return keyed ? std::strcmp(cells[size_t(a)].text, cells[size_t(b)].text) < 0
                     : cells[size_t(a)].host < cells[size_t(b)].host;
    };
    // Sorted, equal keys are neighbours: n log n, for communicators of
    // many thousand ranks.
    std::vector<int> order(static_cast<size_t>(size));
    for (int q = 0; q < size; ++q) order[size_t(q)] = q;
    std::sort(order.begin(), order.end(), less);
    NodeGuess g;
    g.smallest = size;
    for (size_t i = 0; i < order.size();) {
        size_t j = i + 1;
        while (j < order.size() && !less(order[i], order[j])) ++j;
        ++g.nodes;
        g.smallest = std::min(g.smallest, int(j - i));
        i = j;
    }
    return g;
}

Status mpi_failed(const char *call, const std::string &what, int rc) {
    return set_error(TERSE_ERR_MPI, "two-level layout of communicator %s: %s failed (code %d)", what.c_str(),
                     call, rc);
}

// The color of this rank's node from everyone's TERSE_NODE_KEY: the lowest
// rank with the same key.  -1 with *status clear when no rank sets one.
// *guess: the nodes as the keys, or the host names, show them.
Status node_color(MPI_Comm comm, int rank, int size, const std::string &key, const std::string &what, int *color,
                  NodeGuess *guess) {
    std::vector<KeyCell> cells(size_t(size) + 1);
    KeyCell &mine = cells[size_t(size)];
    std::memset(&mine, 0, sizeof mine);
    mine.host = host_name_hash();
    mine.set = key.empty() ? 0 : 1;
    std::memcpy(mine.text, key.data(), std::min(key.size(), sizeof mine.text - 1));
    int rc = PMPI_Allgather(&mine, int(sizeof mine), MPI_CHAR, cells.data(), int(sizeof mine), MPI_CHAR, comm);
    if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Allgather of the node keys", what, rc);
    *guess = guess_nodes(cells, size);  // keys set on some ranks only: the error below
    int first_set = -1, first_unset = -1;
    for (int q = 0; q < size; ++q) {
        int &first = cells[size_t(q)].set ? first_set : first_unset;
        if (first < 0) first = q;
    }
    if (first_set < 0) {
        *color = -1;
        return TERSE_OK;
    }
    if (first_unset >= 0)
        return set_error(
            TERSE_ERR_MISMATCH,
            "two-level layout of communicator %s: TERSE_NODE_KEY is set on rank %d (to '%s') but not on "
            "rank %d; set it on every rank or on none",
            what.c_str(), first_set, cells[size_t(first_set)].text, first_unset);
    for (int q = 0; q <= rank; ++q)
        if (std::strcmp(cells[size_t(q)].text, cells[size_t(rank)].text) == 0) {
            *color = q;
            break;
        }
    return TERSE_OK;
}

}  // namespace

Status NodeLayout::make(MPI_Comm comm, const std::string &node_key, const std::string &what,
                        bool only_if_two_level_fits, std::unique_ptr<NodeLayout> *out) {
    out->reset();
    std::unique_ptr<NodeLayout> l(new (std::nothrow) NodeLayout());
    if (!l) return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for a two-level layout");
    int rank = 0, size = 1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    int color = -1;
    NodeGuess guess;
    Status s = node_color(comm, rank, size, node_key, what, &color, &guess);
    if (s != TERSE_OK) return s;
    if (only_if_two_level_fits && (guess.nodes < 2 || guess.smallest < 2)) return TERSE_OK;
    int rc = color >= 0 ? PMPI_Comm_split(comm, color, rank, l->node_.out())
                        : PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, l->node_.out());
    if (rc != MPI_SUCCESS) return mpi_failed(color >= 0 ? "PMPI_Comm_split" : "PMPI_Comm_split_type", what, rc);
    TwoLevelEnv &e = l->env_;
    PMPI_Comm_rank(l->node_.get(), &e.node_rank);
    PMPI_Comm_size(l->node_.get(), &e.node_size);

    // The smallest and the largest node, then how many there are.
    int in[2] = {e.node_size, -e.node_size}, agg[2];
    rc = PMPI_Allreduce(in, agg, 2, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Allreduce", what, rc);
    e.shards = agg[0];
    l->ranks_per_node_max_ = -agg[1];
    int leader = e.node_rank == 0 ? 1 : 0;
    rc = PMPI_Allreduce(&leader, &e.nodes, 1, MPI_INT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Allreduce", what, rc);

    const bool on_rail = e.node_rank < e.shards;
    rc = PMPI_Comm_split(comm, on_rail ? e.node_rank : MPI_UNDEFINED, rank, l->rail_.out());
    if (rc != MPI_SUCCESS) return mpi_failed("PMPI_Comm_split", what, rc);
    try {
        l->node_control_ = make_node_mpi_control(l->node_.get());
        if (on_rail) {
            PMPI_Comm_rank(l->rail_.get(), &e.rail_rank);
            PMPI_Comm_size(l->rail_.get(), &e.rail_size);
            MPI_Group g, wg;
            PMPI_Comm_group(l->rail_.get(), &g);
            PMPI_Comm_group(MPI_COMM_WORLD, &wg);
            std::vector<int> ranks(size_t(e.rail_size));
            for (int i = 0; i < e.rail_size; ++i) ranks[size_t(i)] = i;
            l->rail_world_.assign(size_t(e.rail_size), -1);
            PMPI_Group_translate_ranks(g, e.rail_size, ranks.data(), wg, l->rail_world_.data());
            PMPI_Group_free(&g);
            PMPI_Group_free(&wg);
            l->rail_control_ = make_mpi_control(l->rail_.get());
            l->rail_link_ = make_transport_link(&l->rail_world_);
        }
    } catch (const std::bad_alloc &) {
        return set_error(TERSE_ERR_NO_MEMORY, "terse: out of memory for a two-level layout");
    }
    e.node = l->node_control_.get();
    e.rail_link = l->rail_link_.get();
    e.rail_control = l->rail_control_.get();
    e.rail_config = &l->rail_config_;
    *out = std::move(l);
    return TERSE_OK;
}

void NodeLayout::set_config(const CommConfig &cfg) {
    rail_config_ = cfg;
    rail_config_.algorithm = Algorithm::Auto;
}

std::string NodeLayout::describe() const {
    const TwoLevelEnv &e = env_;
    std::string s = std::to_string(e.nodes) + " node" + (e.nodes == 1 ? "" : "s") + " of " +
                    (e.shards == ranks_per_node_max_
                         ? std::to_string(e.shards)
                         : std::to_string(e.shards) + ".." + std::to_string(ranks_per_node_max_)) +
                    " ranks, " + std::to_string(e.shards) + " shard" + (e.shards == 1 ? "" : "s") +
                    "; this rank: node rank " + std::to_string(e.node_rank) + " of " +
                    std::to_string(e.node_size);
    if (e.rail_rank >= 0)
        s += ", rail rank " + std::to_string(e.rail_rank) + " of " + std::to_string(e.rail_size);
    else s += ", on no rail";
    return s;
}

}  // namespace terse
