#include "kubestat/limits/fit.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::limits {
namespace {

// The tightest value of one constraint over every LimitRange, and where it comes from.
struct Tightest {
  std::optional<BoundBy> min;
  std::optional<BoundBy> max;
  std::optional<BoundBy> ratio;
};

Tightest TightestOf(std::span<const LimitRange> limit_ranges, LimitType type, Resource r) {
  Tightest t;
  auto keep = [](std::optional<BoundBy>* slot, BoundBy candidate, bool higher_is_tighter) {
    if (!*slot ||
        (higher_is_tighter ? candidate.value > (*slot)->value : candidate.value < (*slot)->value)) {
      *slot = std::move(candidate);
    }
  };
  for (const LimitRange& lr : limit_ranges) {
    for (const LimitRangeItem& item : lr.items) {
      if (item.type != type) continue;
      if (item.min[r]) keep(&t.min, {lr.name, type, Constraint::kMin, *item.min[r]}, true);
      if (item.max[r]) keep(&t.max, {lr.name, type, Constraint::kMax, *item.max[r]}, false);
      if (item.max_limit_request_ratio[r]) {
        keep(&t.ratio,
             {lr.name, type, Constraint::kMaxLimitRequestRatio, *item.max_limit_request_ratio[r]},
             false);
      }
    }
  }
  return t;
}

void Note(FittedValue* v, const BoundBy& bound) {
  if (std::find(v->bound_by.begin(), v->bound_by.end(), bound) == v->bound_by.end()) {
    v->bound_by.push_back(bound);
  }
}

// Sets *v to `value` and names `bound` when that moves it.
void MoveTo(FittedValue* v, int64_t value, const BoundBy& bound) {
  if (v->value == value) return;
  v->value = value;
  Note(v, bound);
}

int64_t CeilDiv(__int128 a, __int128 b) { return static_cast<int64_t>((a + b - 1) / b); }

// Splits `amount` (<= the sum of `room`) over the entries in proportion to their room,
// each share at most its room; the shares sum to `amount` exactly.
std::vector<int64_t> Share(int64_t amount, const std::vector<int64_t>& room) {
  __int128 room_left = 0;
  for (int64_t x : room) room_left += x;
  std::vector<int64_t> shares(room.size(), 0);
  int64_t left = amount;
  for (size_t i = 0; i < room.size() && left > 0; ++i) {
    if (room[i] <= 0) continue;
    const int64_t proportional = CeilDiv(static_cast<__int128>(left) * room[i], room_left);
    shares[i] = std::min(room[i], proportional);
    left -= shares[i];
    room_left -= room[i];
  }
  return shares;
}

int64_t Sum(const std::vector<FittedContainer>& cs, Resource r, bool limits) {
  int64_t total = 0;
  for (const FittedContainer& c : cs) {
    total += limits ? c[r].limit.value : c[r].request.value;
  }
  return total;
}

FittedResource& At(FittedContainer& c, Resource r) { return c.resources[static_cast<size_t>(r)]; }

// Spreads `amount` over the containers in proportion to room(resource) and hands each share
// to move(resource, share); returns what did not fit.
template <typename Room, typename Move>
int64_t Spread(std::vector<FittedContainer>* cs, Resource r, int64_t amount, Room room, Move move) {
  std::vector<int64_t> rooms;
  for (FittedContainer& c : *cs) rooms.push_back(std::max<int64_t>(0, room(At(c, r))));
  const std::vector<int64_t> shares = Share(amount, rooms);
  for (size_t i = 0; i < cs->size(); ++i) {
    move(At((*cs)[i], r), shares[i]);
    amount -= shares[i];
  }
  return amount;
}

// Raises the requests' sum by `amount`, first toward the limits, then (limits_too) requests
// and limits together up to `ceiling`. Names `bound` on every value moved.
void RaiseRequests(std::vector<FittedContainer>* cs, Resource r, int64_t amount, int64_t ceiling,
                   const BoundBy& bound, bool limits_too) {
  const int64_t left = Spread(
      cs, r, amount, [](FittedResource& v) { return v.limit.value - v.request.value; },
      [&](FittedResource& v, int64_t s) { MoveTo(&v.request, v.request.value + s, bound); });
  if (left <= 0 || !limits_too) return;
  Spread(
      cs, r, left, [&](FittedResource& v) { return ceiling - v.limit.value; },
      [&](FittedResource& v, int64_t s) {
        MoveTo(&v.limit, v.limit.value + s, bound);
        MoveTo(&v.request, v.request.value + s, bound);
      });
}

// Lowers the limits' sum by `amount`, first toward the requests, then requests and limits
// together down to `floor`.
void LowerLimits(std::vector<FittedContainer>* cs, Resource r, int64_t amount, int64_t floor,
                 const BoundBy& bound) {
  const int64_t left = Spread(
      cs, r, amount, [](FittedResource& v) { return v.limit.value - v.request.value; },
      [&](FittedResource& v, int64_t s) { MoveTo(&v.limit, v.limit.value - s, bound); });
  if (left <= 0) return;
  Spread(
      cs, r, left, [&](FittedResource& v) { return v.limit.value - floor; },
      [&](FittedResource& v, int64_t s) {
        MoveTo(&v.limit, v.limit.value - s, bound);
        MoveTo(&v.request, v.request.value - s, bound);
      });
}

// Why the bounds of one resource admit no pod, or empty.
std::string Contradiction(Resource r, const Tightest& c, const Tightest& p, size_t n) {
  auto text = [r](const BoundBy& b) { return Describe(r, b); };
  if (c.min && c.max && c.min->value > c.max->value) {
    return StrCat(text(*c.min), " is above ", text(*c.max));
  }
  if (p.min && p.max && p.min->value > p.max->value) {
    return StrCat(text(*p.min), " is above ", text(*p.max));
  }
  const int64_t count = static_cast<int64_t>(n);
  if (c.min && p.max && static_cast<__int128>(c.min->value) * count > p.max->value) {
    return StrCat(text(*c.min), " for each of ", count, " containers is above ", text(*p.max));
  }
  if (c.max && p.min && static_cast<__int128>(c.max->value) * count < p.min->value) {
    return StrCat(text(*c.max), " for each of ", count, " containers is below ", text(*p.min));
  }
  return "";
}

}  // namespace

std::string Describe(Resource resource, const BoundBy& bound) {
  const std::string value = bound.constraint == Constraint::kMaxLimitRequestRatio
                                ? Quantity::FromMilli(bound.value).String()
                                : FormatAmount(resource, bound.value);
  return StrCat(LimitTypeName(bound.type), " ", ResourceName(resource), " ",
                ConstraintName(bound.constraint), " ", value, " (LimitRange ", bound.limit_range,
                ")");
}

FittedPod Fit(std::span<const LimitRange> limit_ranges, std::span<const ContainerWant> wants) {
  FittedPod pod;
  for (const ContainerWant& w : wants) {
    FittedContainer c;
    c.name = w.name;
    for (Resource r : kResources) {
      const Wanted& want = w.want[static_cast<size_t>(r)];
      At(c, r).request.value = std::max<int64_t>(1, want.request);
      At(c, r).limit.value = std::max(At(c, r).request.value, want.limit);
    }
    pod.containers.push_back(std::move(c));
  }
  std::vector<std::string> conflicts;
  for (Resource r : kResources) {
    const Tightest container = TightestOf(limit_ranges, LimitType::kContainer, r);
    const Tightest whole = TightestOf(limit_ranges, LimitType::kPod, r);
    if (std::string why = Contradiction(r, container, whole, wants.size()); !why.empty()) {
      conflicts.push_back(std::move(why));
    }
    // 1 and 2: each container on its own; a max is applied after a min, so it wins.
    for (FittedContainer& c : pod.containers) {
      FittedResource& v = At(c, r);
      if (container.min) {
        const int64_t floor = std::max<int64_t>(1, container.min->value);
        if (v.request.value < floor) MoveTo(&v.request, floor, *container.min);
        if (v.limit.value < floor) MoveTo(&v.limit, floor, *container.min);
      }
      if (container.max) {
        const int64_t ceiling = std::max<int64_t>(1, container.max->value);
        if (v.limit.value > ceiling) MoveTo(&v.limit, ceiling, *container.max);
        if (v.request.value > ceiling) MoveTo(&v.request, ceiling, *container.max);
      }
      if (container.ratio && static_cast<__int128>(v.limit.value) * 1000 >
                                 static_cast<__int128>(container.ratio->value) * v.request.value) {
        MoveTo(&v.request,
               CeilDiv(static_cast<__int128>(v.limit.value) * 1000, container.ratio->value),
               *container.ratio);
      }
    }
    // 3: the pod's sums.
    const int64_t ceiling = container.max ? container.max->value : INT64_MAX / 4;
    const int64_t floor = std::max<int64_t>(1, container.min ? container.min->value : 1);
    if (whole.min && Sum(pod.containers, r, false) < whole.min->value) {
      RaiseRequests(&pod.containers, r, whole.min->value - Sum(pod.containers, r, false), ceiling,
                    *whole.min, /*limits_too=*/true);
    }
    if (whole.max && Sum(pod.containers, r, true) > whole.max->value) {
      LowerLimits(&pod.containers, r, Sum(pod.containers, r, true) - whole.max->value, floor,
                  *whole.max);
    }
    if (whole.ratio) {
      const int64_t needed =
          CeilDiv(static_cast<__int128>(Sum(pod.containers, r, true)) * 1000, whole.ratio->value);
      const int64_t have = Sum(pod.containers, r, false);
      if (have < needed) {
        RaiseRequests(&pod.containers, r, needed - have, ceiling, *whole.ratio,
                      /*limits_too=*/false);
      }
    }
  }
  if (!conflicts.empty()) {
    pod.conflict = "no pod is admitted in this namespace: ";
    for (size_t i = 0; i < conflicts.size(); ++i) {
      pod.conflict += (i ? "; " : "") + conflicts[i];
    }
    pod.conflict += "; where they disagree, a max wins over a min";
  } else if (std::vector<Violation> left = Check(limit_ranges, AsPodSpec(pod)); !left.empty()) {
    // Not expected (the property test looks for it); said rather than hidden.
    pod.conflict = StrCat("not admitted: ", left.front().message);
  }
  return pod;
}

std::vector<ContainerResources> AsPodSpec(const FittedPod& pod) {
  std::vector<ContainerResources> out;
  for (const FittedContainer& c : pod.containers) {
    ContainerResources spec;
    spec.name = c.name;
    for (Resource r : kResources) {
      spec.requests[r] = c[r].request.value;
      spec.limits[r] = c[r].limit.value;
    }
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace kubestat::limits
