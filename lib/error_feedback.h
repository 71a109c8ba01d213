// Placeholder created by the lead so the tree compiles; the engine part replaces it.
#pragma once
namespace terse {
class FeedbackStore {};
}  // namespace terse
