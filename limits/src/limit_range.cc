#include "kubestat/limits/limit_range.h"

#include <cstdio>
#include <utility>

#include "kubestat/apimachinery/quantity.h"
#include "kubestat/core/str_cat.h"

namespace kubestat::limits {
namespace {

std::string Ratio(int64_t milli) { return Quantity::FromMilli(milli).String(); }

// The observed ratio as LimitRanger prints it (%f).
std::string ObservedRatio(int64_t limit, int64_t request) {
  char text[64];
  std::snprintf(text, sizeof(text), "%f",
                static_cast<double>(limit) / static_cast<double>(request));
  return text;
}

bool RatioExceeded(int64_t limit, int64_t request, int64_t ratio_milli) {
  return static_cast<__int128>(limit) * 1000 > static_cast<__int128>(ratio_milli) * request;
}

// Sums a resource over the containers; nullopt unless every container gives it (as
// LimitRanger's sum omits a resource missing from any input).
std::optional<int64_t> PodSum(std::span<const ContainerResources> containers, Resource r,
                              bool limits) {
  int64_t total = 0;
  for (const ContainerResources& c : containers) {
    const std::optional<int64_t>& v = limits ? c.limits[r] : c.requests[r];
    if (!v) return std::nullopt;
    total += *v;
  }
  return total;
}

void CheckOne(const std::string& lr, LimitType type, const LimitRangeItem& item,
              const std::string& container, const Amounts& requests, const Amounts& limits,
              std::vector<Violation>* out) {
  const std::string_view per = LimitTypeName(type);
  for (Resource r : kResources) {
    const std::string_view name = ResourceName(r);
    auto add = [&](Constraint constraint, std::string message) {
      out->push_back({lr, type, constraint, r, container, std::move(message)});
    };
    const std::optional<int64_t>& req = requests[r];
    const std::optional<int64_t>& lim = limits[r];
    if (const auto& min = item.min[r]) {
      const std::string enforced = FormatAmount(r, *min);
      if (!req) {
        add(Constraint::kMin, StrCat("minimum ", name, " usage per ", per, " is ", enforced,
                                     ".  No request is specified"));
      } else if (*req < *min) {
        add(Constraint::kMin, StrCat("minimum ", name, " usage per ", per, " is ", enforced,
                                     ", but request is ", FormatAmount(r, *req)));
      } else if (lim && *lim < *min) {
        add(Constraint::kMin, StrCat("minimum ", name, " usage per ", per, " is ", enforced,
                                     ", but limit is ", FormatAmount(r, *lim)));
      }
    }
    if (const auto& max = item.max[r]) {
      const std::string enforced = FormatAmount(r, *max);
      if (!lim) {
        add(Constraint::kMax, StrCat("maximum ", name, " usage per ", per, " is ", enforced,
                                     ".  No limit is specified"));
      } else if (*lim > *max) {
        add(Constraint::kMax, StrCat("maximum ", name, " usage per ", per, " is ", enforced,
                                     ", but limit is ", FormatAmount(r, *lim)));
      } else if (req && *req > *max) {
        add(Constraint::kMax, StrCat("maximum ", name, " usage per ", per, " is ", enforced,
                                     ", but request is ", FormatAmount(r, *req)));
      }
    }
    if (const auto& ratio = item.max_limit_request_ratio[r]) {
      const std::string prefix =
          StrCat(name, " max limit to request ratio per ", per, " is ", Ratio(*ratio));
      if (!req || *req == 0) {
        add(Constraint::kMaxLimitRequestRatio,
            StrCat(prefix, ", but no request is specified or request is 0"));
      } else if (!lim || *lim == 0) {
        add(Constraint::kMaxLimitRequestRatio,
            StrCat(prefix, ", but no limit is specified or limit is 0"));
      } else if (RatioExceeded(*lim, *req, *ratio)) {
        add(Constraint::kMaxLimitRequestRatio,
            StrCat(prefix, ", but provided ratio is ", ObservedRatio(*lim, *req)));
      }
    }
  }
}

absl::Status ItemError(const LimitRange& lr, size_t index, Resource r, std::string_view what) {
  return absl::InvalidArgumentError(StrCat("LimitRange \"", lr.name, "\": spec.limits[", index,
                                           "] ", ResourceName(r), ": ", what));
}

}  // namespace

std::string_view ResourceName(Resource resource) {
  return resource == Resource::kCpu ? "cpu" : "memory";
}

std::string FormatAmount(Resource resource, int64_t value) {
  return resource == Resource::kCpu ? Quantity::FromMilli(value).String()
                                    : FormatMemoryBytes(value);
}

absl::StatusOr<int64_t> ParseAmount(Resource resource, std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return q.status();
  return resource == Resource::kCpu ? q->MilliValue() : q->Value();
}

absl::StatusOr<int64_t> ParseRatio(std::string_view text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return q.status();
  return q->MilliValue();
}

std::string_view LimitTypeName(LimitType type) {
  return type == LimitType::kContainer ? "Container" : "Pod";
}

std::string_view ConstraintName(Constraint constraint) {
  switch (constraint) {
    case Constraint::kMin:
      return "min";
    case Constraint::kMax:
      return "max";
    case Constraint::kMaxLimitRequestRatio:
      return "maxLimitRequestRatio";
  }
  return "";
}

LimitRangeItem WithApiDefaults(LimitRangeItem item) {
  if (item.type != LimitType::kContainer) return item;
  for (Resource r : kResources) {
    if (!item.default_limit[r]) item.default_limit[r] = item.max[r];
    if (!item.default_request[r]) item.default_request[r] = item.default_limit[r];
    if (!item.default_request[r]) item.default_request[r] = item.min[r];
  }
  return item;
}

absl::Status Validate(const LimitRange& lr) {
  for (size_t i = 0; i < lr.items.size(); ++i) {
    const LimitRangeItem& item = lr.items[i];
    for (Resource r : kResources) {
      for (const auto* field : {&item.min, &item.max, &item.default_limit, &item.default_request,
                                &item.max_limit_request_ratio}) {
        if ((*field)[r] && *(*field)[r] < 0) return ItemError(lr, i, r, "a value is negative");
      }
      const auto& min = item.min[r];
      const auto& max = item.max[r];
      const auto& def = item.default_limit[r];
      const auto& def_req = item.default_request[r];
      if (min && max && *min > *max) return ItemError(lr, i, r, "min must be <= max");
      if (item.type == LimitType::kPod && (def || def_req)) {
        return ItemError(lr, i, r, "default and defaultRequest are not allowed for type Pod");
      }
      for (const auto* value : {&def, &def_req}) {
        if (!*value) continue;
        if (min && **value < *min) return ItemError(lr, i, r, "a default must be >= min");
        if (max && **value > *max) return ItemError(lr, i, r, "a default must be <= max");
      }
      if (def && def_req && *def_req > *def) {
        return ItemError(lr, i, r, "defaultRequest must be <= default");
      }
      if (const auto& ratio = item.max_limit_request_ratio[r]) {
        if (*ratio < 1000) return ItemError(lr, i, r, "maxLimitRequestRatio must be >= 1");
        if (min && max && *min > 0 &&
            static_cast<__int128>(*ratio) * *min > static_cast<__int128>(*max) * 1000) {
          return ItemError(lr, i, r, "maxLimitRequestRatio must be <= max/min");
        }
      }
    }
  }
  return absl::OkStatus();
}

std::vector<ContainerResources> ApplyDefaults(std::span<const LimitRange> limit_ranges,
                                              std::vector<ContainerResources> containers) {
  for (ContainerResources& c : containers) {
    for (Resource r : kResources) {
      if (!c.requests[r] && c.limits[r]) c.requests[r] = c.limits[r];
    }
  }
  for (const LimitRange& lr : limit_ranges) {
    for (const LimitRangeItem& stored : lr.items) {
      if (stored.type != LimitType::kContainer) continue;
      const LimitRangeItem item = WithApiDefaults(stored);
      for (ContainerResources& c : containers) {
        for (Resource r : kResources) {
          if (!c.limits[r]) c.limits[r] = item.default_limit[r];
          if (!c.requests[r]) c.requests[r] = item.default_request[r];
        }
      }
    }
  }
  return containers;
}

std::vector<Violation> Check(std::span<const LimitRange> limit_ranges,
                             std::span<const ContainerResources> containers) {
  std::vector<Violation> out;
  for (const LimitRange& lr : limit_ranges) {
    for (const LimitRangeItem& item : lr.items) {
      if (item.type == LimitType::kContainer) {
        for (const ContainerResources& c : containers) {
          CheckOne(lr.name, item.type, item, c.name, c.requests, c.limits, &out);
        }
        continue;
      }
      Amounts requests;
      Amounts limits;
      for (Resource r : kResources) {
        requests[r] = PodSum(containers, r, /*limits=*/false);
        limits[r] = PodSum(containers, r, /*limits=*/true);
      }
      CheckOne(lr.name, item.type, item, "", requests, limits, &out);
    }
  }
  return out;
}

std::vector<Violation> Admit(std::span<const LimitRange> limit_ranges,
                             std::vector<ContainerResources> containers) {
  const std::vector<ContainerResources> defaulted =
      ApplyDefaults(limit_ranges, std::move(containers));
  return Check(limit_ranges, defaulted);
}

}  // namespace kubestat::limits
