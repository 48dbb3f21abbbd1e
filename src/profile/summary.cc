#include "profile/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "onyx/status.h"

namespace onyx {

namespace {

std::string shape_text(const Json* shapes) {
  // [{"float":[1,3,224,224]}, ...] -> float[1,3,224,224]
  if (!shapes || shapes->type != Json::Type::Array) return "";
  std::string out;
  for (auto& item : shapes->array) {
    if (!out.empty()) out += ", ";
    if (item.type != Json::Type::Object || item.object.empty()) {
      out += "-";
      continue;
    }
    auto& [type, dims] = item.object.front();
    out += type + "[";
    for (size_t d = 0; d < dims.array.size(); ++d) {
      if (d) out += ",";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", dims.array[d].number);
      out += buf;
    }
    out += "]";
  }
  return out;
}

std::vector<TimeStat> rank(std::map<std::string, TimeStat>& stats, double total) {
  std::vector<TimeStat> v;
  for (auto& [k, s] : stats) {
    s.key = k;
    s.mean_us = s.count ? s.total_us / s.count : 0;
    s.share = total > 0 ? s.total_us / total : 0;
    v.push_back(s);
  }
  std::stable_sort(v.begin(), v.end(), [](const TimeStat& a, const TimeStat& b) { return a.total_us > b.total_us; });
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

// Colours per op type: distinct for the top op types (by rank), grey after.
struct Palette {
  std::map<std::string, std::string> colours;
  explicit Palette(const std::vector<TimeStat>& by_op) {
    static const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#8c564b"};
    for (size_t i = 0; i < by_op.size(); ++i) colours[by_op[i].key] = i < 12 ? palette[i] : "#bab0ac";
  }
  std::string operator()(const std::string& op) const {
    auto it = colours.find(op.empty() ? "?" : op);
    return it == colours.end() ? "#bab0ac" : it->second;
  }
};

}  // namespace

TraceSummary summarize_trace(const Json& doc) {
  const Json* events = &doc;
  if (doc.type == Json::Type::Object) events = doc.get("traceEvents");
  if (!events || events->type != Json::Type::Array)
    fail(ErrorCode::InvalidArgument, "not a Chrome trace: expected an array of events or an object with traceEvents");
  TraceSummary s;
  for (const Json& e : events->array) {
    if (e.type != Json::Type::Object || e.str("ph", "X") != "X") continue;
    TraceEvent t;
    t.cat = e.str("cat");
    t.name = e.str("name");
    t.ts = e.num("ts");
    t.dur = e.num("dur");
    t.tid = static_cast<int64_t>(e.num("tid"));
    const Json* args = e.get("args");
    if (args) {
      t.run = args->get("run") ? static_cast<int64_t>(args->num("run", -1)) : -1;
      t.op = args->str("op_name");
      t.provider = args->str("provider");
      t.output_shape = shape_text(args->get("output_type_shape"));
      const Json* size = args->get("output_size");
      if (size && size->type == Json::Type::Number) t.output_size = size->number;
      else if (size && size->type == Json::Type::String) t.output_size = std::atof(size->string.c_str());
    }
    if (t.cat == "Node") s.nodes.push_back(std::move(t));
    else if (t.name == "model_run") s.runs.push_back(std::move(t));
    else if (t.cat == "Session") s.session_events.push_back(std::move(t));
  }
  std::sort(s.runs.begin(), s.runs.end(), [](const TraceEvent& a, const TraceEvent& b) { return a.ts < b.ts; });
  // Traces without run numbers (onnxruntime's): a node belongs to the run on
  // its thread whose interval holds it.
  for (size_t i = 0; i < s.runs.size(); ++i)
    if (s.runs[i].run < 0) s.runs[i].run = static_cast<int64_t>(i);
  for (auto& n : s.nodes) {
    if (n.run >= 0) continue;
    for (auto& r : s.runs)
      if (r.tid == n.tid && n.ts >= r.ts && n.ts <= r.ts + r.dur) n.run = r.run;
    if (n.run < 0)
      for (auto& r : s.runs)
        if (n.ts >= r.ts && n.ts <= r.ts + r.dur) n.run = r.run;
  }
  std::map<std::string, TimeStat> ops, nodes;
  for (auto& n : s.nodes) {
    s.node_total_us += n.dur;
    TimeStat& o = ops[n.op.empty() ? "?" : n.op];
    o.count++;
    o.total_us += n.dur;
    TimeStat& x = nodes[n.name];
    x.count++;
    x.total_us += n.dur;
    x.op = n.op;
    x.provider = n.provider;
  }
  s.by_op = rank(ops, s.node_total_us);
  s.by_node = rank(nodes, s.node_total_us);
  return s;
}

TraceSummary summarize_trace_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::InvalidArgument, "cannot open the trace '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return summarize_trace(parse_json(ss.str()));
  } catch (const Error& e) {
    fail(e.code(), "trace '" + path + "': " + e.what());
  }
}

std::string summary_text(const TraceSummary& s, size_t top) {
  std::ostringstream os;
  double run_total = 0;
  for (auto& r : s.runs) run_total += r.dur;
  char line[512];
  std::snprintf(line, sizeof line, "%zu runs (mean %.3f ms), %zu node events, %.3f ms in nodes\n", s.runs.size(),
                s.runs.empty() ? 0.0 : run_total / s.runs.size() / 1e3, s.nodes.size(), s.node_total_us / 1e3);
  os << line;
  for (auto& e : s.session_events)
    if (e.name.rfind("optimizer_pass:", 0) != 0) {
      std::snprintf(line, sizeof line, "  %-28s %10.3f ms\n", e.name.c_str(), e.dur / 1e3);
      os << line;
    }
  os << "\nTop op types by total time:\n";
  std::snprintf(line, sizeof line, "  %-24s %8s %12s %10s %7s\n", "op type", "count", "total ms", "mean ms", "share");
  os << line;
  for (size_t i = 0; i < s.by_op.size() && i < top; ++i) {
    auto& t = s.by_op[i];
    std::snprintf(line, sizeof line, "  %-24s %8lld %12.3f %10.4f %6.1f%%\n", t.key.c_str(),
                  static_cast<long long>(t.count), t.total_us / 1e3, t.mean_us / 1e3, t.share * 100);
    os << line;
  }
  os << "\nTop nodes by total time:\n";
  std::snprintf(line, sizeof line, "  %-40s %-18s %8s %12s %10s %7s\n", "node", "op type", "count", "total ms", "mean ms",
                "share");
  os << line;
  for (size_t i = 0; i < s.by_node.size() && i < top; ++i) {
    auto& t = s.by_node[i];
    std::string name = t.key.size() > 40 ? t.key.substr(0, 37) + "..." : t.key;
    std::snprintf(line, sizeof line, "  %-40s %-18s %8lld %12.3f %10.4f %6.1f%%\n", name.c_str(), t.op.c_str(),
                  static_cast<long long>(t.count), t.total_us / 1e3, t.mean_us / 1e3, t.share * 100);
    os << line;
  }
  return os.str();
}

std::string summary_html(const TraceSummary& s, const std::string& title, size_t top) {
  std::ostringstream h;
  Palette colour_of(s.by_op);
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>Onyx profile: " << html_escape(title)
    << "</title>\n<style>\n"
       "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:24px;color:#222;}\n"
       "h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}\n"
       ".meta{color:#555;font-size:13px}\n"
       "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}\n"
       "td:first-child,th:first-child,td.l,th.l{text-align:left}th{background:#f4f4f4}\n"
       "svg text{font-size:12px;fill:#222}svg .small{font-size:10px;fill:#555}\n"
       "#tip{position:fixed;pointer-events:none;background:#fff;border:1px solid #999;padding:4px 8px;font-size:12px;"
       "display:none;white-space:pre}\n"
       "</style></head><body>\n";
  double run_total = 0;
  for (auto& r : s.runs) run_total += r.dur;
  h << "<h1>Onyx profile</h1>\n<div class=\"meta\">" << html_escape(title) << " &mdash; " << s.runs.size()
    << " runs, mean " << fmt("%.3f", s.runs.empty() ? 0.0 : run_total / s.runs.size() / 1e3) << " ms; "
    << s.nodes.size() << " node events, " << fmt("%.3f", s.node_total_us / 1e3) << " ms in nodes</div>\n";

  // Bar chart: time per op type.
  size_t nbars = std::min(s.by_op.size(), std::max<size_t>(top, 1));
  const int bar_h = 22, label_w = 190, chart_w = 640, value_w = 170;
  int height = static_cast<int>(nbars) * bar_h + 10;
  h << "<h2>Time per op type (all runs)</h2>\n<svg id=\"ops\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
    << label_w + chart_w + value_w << "\" height=\"" << height << "\">\n";
  double max_total = s.by_op.empty() ? 1 : std::max(s.by_op.front().total_us, 1e-9);
  for (size_t i = 0; i < nbars; ++i) {
    auto& t = s.by_op[i];
    int y = static_cast<int>(i) * bar_h + 4;
    double w = std::max(1.0, chart_w * t.total_us / max_total);
    h << "<g><title>" << html_escape(t.key) << ": " << t.count << " calls, " << fmt("%.3f", t.total_us / 1e3)
      << " ms total, " << fmt("%.4f", t.mean_us / 1e3) << " ms mean, " << fmt("%.1f", t.share * 100) << "%</title>"
      << "<text x=\"" << label_w - 8 << "\" y=\"" << y + 15 << "\" text-anchor=\"end\">" << html_escape(t.key)
      << "</text><rect class=\"bar\" x=\"" << label_w << "\" y=\"" << y << "\" width=\"" << fmt("%.1f", w)
      << "\" height=\"" << bar_h - 6 << "\" fill=\"" << colour_of(t.key) << "\"/><text x=\""
      << label_w + static_cast<int>(w) + 6 << "\" y=\"" << y + 15 << "\">" << fmt("%.2f", t.total_us / 1e3) << " ms ("
      << fmt("%.1f", t.share * 100) << "%)</text></g>\n";
  }
  h << "</svg>\n";

  // Timeline of the run of median duration.
  if (!s.runs.empty()) {
    std::vector<const TraceEvent*> by_dur;
    for (auto& r : s.runs) by_dur.push_back(&r);
    std::sort(by_dur.begin(), by_dur.end(), [](auto* a, auto* b) { return a->dur < b->dur; });
    const TraceEvent& run = *by_dur[by_dur.size() / 2];
    std::vector<const TraceEvent*> nodes;
    std::vector<int64_t> tids;
    for (auto& n : s.nodes)
      if (n.run == run.run) {
        nodes.push_back(&n);
        if (std::find(tids.begin(), tids.end(), n.tid) == tids.end()) tids.push_back(n.tid);
      }
    const int left = 90, width = 1000, lane_h = 34, axis_h = 24;
    int svg_h = axis_h + static_cast<int>(std::max<size_t>(tids.size(), 1)) * lane_h + 8;
    double span = std::max(run.dur, 1e-3);
    h << "<h2>Timeline of run " << run.run << " (" << fmt("%.3f", run.dur / 1e3) << " ms, the median run; "
      << nodes.size() << " nodes)</h2>\n<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << left + width + 40 << "\" height=\"" << svg_h << "\">\n";
    for (int k = 0; k <= 10; ++k) {
      double x = left + width * k / 10.0;
      h << "<line x1=\"" << fmt("%.1f", x) << "\" y1=\"" << axis_h - 6 << "\" x2=\"" << fmt("%.1f", x) << "\" y2=\""
        << svg_h - 4 << "\" stroke=\"#ddd\"/><text class=\"small\" x=\"" << fmt("%.1f", x) << "\" y=\"12\" "
        << "text-anchor=\"middle\">" << fmt("%.2f", span * k / 10.0 / 1e3) << " ms</text>\n";
    }
    for (size_t lane = 0; lane < tids.size(); ++lane)
      h << "<text class=\"small\" x=\"4\" y=\"" << axis_h + lane * lane_h + 20 << "\">thread " << tids[lane]
        << "</text>\n";
    for (auto* n : nodes) {
      size_t lane = std::find(tids.begin(), tids.end(), n->tid) - tids.begin();
      double x = left + width * (n->ts - run.ts) / span;
      double w = std::max(0.6, width * n->dur / span);
      int y = axis_h + static_cast<int>(lane) * lane_h + 2;
      h << "<rect class=\"node\" x=\"" << fmt("%.2f", x) << "\" y=\"" << y << "\" width=\"" << fmt("%.2f", w)
        << "\" height=\"" << lane_h - 6 << "\" fill=\"" << colour_of(n->op) << "\" stroke=\"#fff\" stroke-width=\"0.3\">"
        << "<title>" << html_escape(n->name) << " (" << html_escape(n->op) << ", " << html_escape(n->provider) << ")\n"
        << fmt("%.1f", n->dur) << " us at +" << fmt("%.1f", n->ts - run.ts) << " us\noutput "
        << html_escape(n->output_shape) << ", " << fmt("%.0f", n->output_size) << " bytes</title></rect>\n";
    }
    h << "</svg>\n<div class=\"meta\">";
    for (size_t i = 0; i < s.by_op.size() && i < 12; ++i)
      h << "<span style=\"display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;background:"
        << colour_of(s.by_op[i].key) << "\"></span>" << html_escape(s.by_op[i].key);
    h << "<br>Hover a node for its name, time, output shape and size.</div>\n";
  }

  auto table = [&](const std::vector<TimeStat>& v, bool per_node) {
    h << "<table><tr><th>" << (per_node ? "node" : "op type") << "</th>"
      << (per_node ? "<th class=\"l\">op type</th><th class=\"l\">provider</th>" : "")
      << "<th>count</th><th>total ms</th><th>mean ms</th><th>share</th></tr>\n";
    for (size_t i = 0; i < v.size() && i < top; ++i) {
      auto& t = v[i];
      h << "<tr><td>" << html_escape(t.key) << "</td>";
      if (per_node) h << "<td class=\"l\">" << html_escape(t.op) << "</td><td class=\"l\">" << html_escape(t.provider) << "</td>";
      h << "<td>" << t.count << "</td><td>" << fmt("%.3f", t.total_us / 1e3) << "</td><td>"
        << fmt("%.4f", t.mean_us / 1e3) << "</td><td>" << fmt("%.1f", t.share * 100) << "%</td></tr>\n";
    }
    h << "</table>\n";
  };
  h << "<h2>Top op types</h2>\n";
  table(s.by_op, false);
  h << "<h2>Top nodes</h2>\n";
  table(s.by_node, true);
  if (!s.session_events.empty()) {
    h << "<h2>Session</h2>\n<table><tr><th>event</th><th>ms</th></tr>\n";
    for (auto& e : s.session_events)
      h << "<tr><td>" << html_escape(e.name) << "</td><td>" << fmt("%.3f", e.dur / 1e3) << "</td></tr>\n";
    h << "</table>\n";
  }
  // Tooltips follow the mouse (the <title> elements work without this too).
  h << "<div id=\"tip\"></div>\n<script>\n"
       "(function(){var tip=document.getElementById('tip');\n"
       "document.querySelectorAll('svg g, svg rect.node').forEach(function(el){\n"
       "var t=el.querySelector('title');if(!t)return;var text=t.textContent;\n"
       "el.addEventListener('mousemove',function(e){tip.textContent=text;tip.style.display='block';"
       "tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';});\n"
       "el.addEventListener('mouseleave',function(){tip.style.display='none';});});})();\n"
       "</script>\n</body></html>\n";
  return h.str();
}

}  // namespace onyx
