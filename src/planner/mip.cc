#include "planner/mip.h"

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

namespace saturn {
namespace {

// CBC's driver keeps global state; one solve at a time in this process.
std::mutex g_cbc_mutex;

double Finite(double v) {
  if (v == kMipInf) return COIN_DBL_MAX;
  if (v == -kMipInf) return -COIN_DBL_MAX;
  return v;
}

constexpr int kNoCutsRows = 20000;

int NoCallback(CbcModel*, int) {
  return 0;
}

}  // namespace

int MipModel::AddVar(double lower, double upper, double objective, bool integer, std::string name) {
  lower_.push_back(lower);
  upper_.push_back(upper);
  objective_.push_back(objective);
  integer_.push_back(integer);
  names_.push_back(std::move(name));
  return NumVars() - 1;
}

void MipModel::AddRow(const std::vector<std::pair<int, double>>& terms, double lower,
                      double upper) {
  rows_.push_back(terms);
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
}

MipResult MipModel::Solve(const MipOptions& requested) const {
  MipOptions options = requested;
  // SATURN_CBC_LOG=1 shows CBC's own log on stdout (debugging aid).
  if (std::getenv("SATURN_CBC_LOG")) options.log = true;
  // Row-ordered matrix built in one go (appending rows one by one is quadratic).
  std::vector<int> starts, lengths, indices;
  std::vector<double> elements;
  for (const auto& row : rows_) {
    starts.push_back(static_cast<int>(indices.size()));
    lengths.push_back(static_cast<int>(row.size()));
    for (const auto& [v, c] : row) {
      indices.push_back(v);
      elements.push_back(c);
    }
  }
  starts.push_back(static_cast<int>(indices.size()));
  CoinPackedMatrix matrix(false, NumVars(), NumRows(), static_cast<CoinBigIndex>(indices.size()),
                          elements.data(), indices.data(), starts.data(), lengths.data());
  std::vector<double> col_lo(NumVars()), col_up(NumVars()), row_lo(NumRows()), row_up(NumRows());
  for (int i = 0; i < NumVars(); ++i) {
    col_lo[i] = Finite(lower_[i]);
    col_up[i] = Finite(upper_[i]);
  }
  for (int i = 0; i < NumRows(); ++i) {
    row_lo[i] = Finite(row_lower_[i]);
    row_up[i] = Finite(row_upper_[i]);
  }
  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(0);
  solver.loadProblem(matrix, col_lo.data(), col_up.data(), objective_.data(), row_lo.data(),
                     row_up.data());
  for (int i = 0; i < NumVars(); ++i) {
    if (integer_[i]) solver.setInteger(i);
    solver.setColName(i, names_[i]);
  }
  // Column names are needed for the MIP start; CBC 2.10's presolve crashes on
  // models with column names but no row names (coin-or/Cbc#515), so name rows too.
  for (int i = 0; i < NumRows(); ++i)
    solver.setRowName(i, "r" + std::to_string(i));

  std::lock_guard<std::mutex> lock(g_cbc_mutex);
  CbcModel model(solver);
  model.messageHandler()->setLogLevel(options.log ? 1 : 0);
  if (!start_.empty()) {
    std::vector<std::pair<std::string, double>> start;
    for (int i = 0; i < NumVars(); ++i)
      start.emplace_back(names_[i], start_[i]);
    model.setMIPStart(start);
  }
  CbcSolverUsefulData data;
  data.noPrinting_ = !options.log;
  data.useSignalHandler_ = false;
  CbcMain0(model, data);
  std::vector<std::string> args = {"saturn",
                                   "-timeMode",
                                   "elapsed",
                                   "-seconds",
                                   std::to_string(std::max(0.05, options.time_limit_s)),
                                   "-threads",
                                   std::to_string(std::max(1, options.threads)),
                                   "-log",
                                   options.log ? "1" : "0"};
  if (options.max_nodes >= 0) {
    args.insert(args.end(), {"-maxNodes", std::to_string(options.max_nodes)});
  }
  if (std::isfinite(options.cutoff)) {
    args.insert(args.end(), {"-cutoff", std::to_string(options.cutoff)});
  }
  // CBC 2.10's preprocessing crashes in CglPreProcess::postProcess on some of
  // our models (seen on the flow MILP with a MIP start) and is not bounded by
  // the time limit; our models are small and already tight where it matters.
  args.insert(args.end(), {"-preprocess", "off"});
  // Root cut generation does not look at the clock: on the paper's big-M
  // model at Saturn scale (~44k rows) it ran 35-45 s past a 5 s limit, and
  // its cuts left the root bound unchanged. Large models go without them.
  if (NumRows() > kNoCutsRows) args.insert(args.end(), {"-cuts", "off"});
  args.insert(args.end(), {"-solve", "-quit"});
  std::vector<const char*> argv;
  for (const std::string& a : args)
    argv.push_back(a.c_str());
  CbcMain1(static_cast<int>(argv.size()), argv.data(), model, NoCallback, data);

  MipResult result;
  result.nodes = model.getNodeCount();
  result.proven_optimal = model.isProvenOptimal();
  result.proven_infeasible = model.isProvenInfeasible();
  result.hit_limit = model.isSecondsLimitReached() || model.isNodeLimitReached() ||
                     (!result.proven_optimal && !result.proven_infeasible);
  result.bound = model.getBestPossibleObjValue();
  const double* best = model.bestSolution();
  if (best) {
    result.has_solution = true;
    result.values.assign(best, best + NumVars());
    result.objective = model.getObjValue();
  }
  if (result.proven_optimal && result.has_solution) result.bound = result.objective;
  return result;
}

}  // namespace saturn
