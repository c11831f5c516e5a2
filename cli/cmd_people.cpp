// `tandem people CATALOG [ACTION ...]`: the people `tandem tag` grouped the
// catalog's faces into, and a person's corrections: name, merge, split,
// forget, and a full re-cluster on request (pipeline/people.h).
#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "pipeline/catalog.h"

namespace tandem::cli {

namespace {

struct PeopleOptions {
  std::string catalog;
  bool json = false;
  int64_t person = 0, other = 0;
  std::string name;
  std::vector<int64_t> faces;
};

int list_people(const PeopleOptions& o) {
  pipeline::Catalog c(o.catalog);
  const std::vector<pipeline::PersonSummary> people = c.people();
  for (const auto& p : people) {
    if (o.json) {
      fmt::print("{}\n", nlohmann::json{{"id", p.id},
                                        {"name", p.name.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.name)},
                                        {"faces", p.faces},
                                        {"photo", p.photo},
                                        {"box", {p.box.x1, p.box.y1, p.box.x2, p.box.y2}}}
                             .dump());
      continue;
    }
    fmt::print("{:>6}  {:<24} {:>6} face{}  {}\n", p.id, p.name.empty() ? "(unnamed)" : p.name, p.faces,
               p.faces == 1 ? " " : "s", p.photo);
  }
  if (!o.json) fmt::print("{} people\n", people.size());
  return 0;
}

}  // namespace

void add_people_command(CLI::App& app) {
  auto o = std::make_shared<PeopleOptions>();
  CLI::App* sub = app.add_subcommand(
      "people", "List the people tag --faces grouped the catalog's faces into; name, merge, split, forget");
  sub->add_option("catalog", o->catalog, "The SQLite catalog tag --catalog wrote")->required();
  sub->add_flag("--json", o->json, "One JSON object per person and line: id, name, faces, photo, box");
  sub->require_subcommand(0, 1);
  CLI::App* name = sub->add_subcommand("name", "Name a person (\"\" removes the name); naming accepts its faces");
  name->add_option("id", o->person)->required();
  name->add_option("name", o->name)->required();
  CLI::App* merge = sub->add_subcommand("merge", "Move every face of person B into person A");
  merge->add_option("a", o->person)->required();
  merge->add_option("b", o->other)->required();
  CLI::App* split = sub->add_subcommand("split", "Move faces (by face id) out into a new person");
  split->add_option("faces", o->faces)->required();
  CLI::App* forget = sub->add_subcommand("forget", "Delete a person; its faces are left out of people from now on");
  forget->add_option("id", o->person)->required();
  CLI::App* recluster = sub->add_subcommand(
      "recluster", "Group every face again that no one confirmed; names and confirmed faces stay");
  on_run(sub, [o, name, merge, split, forget, recluster] {
    if (name->parsed()) {
      pipeline::Catalog(o->catalog).name_person(o->person, o->name);
    } else if (merge->parsed()) {
      pipeline::Catalog(o->catalog).merge_people(o->person, o->other);
    } else if (split->parsed()) {
      fmt::print("person {}\n", pipeline::Catalog(o->catalog).split_faces(o->faces));
      return 0;
    } else if (forget->parsed()) {
      pipeline::Catalog(o->catalog).forget_person(o->person);
    } else if (recluster->parsed()) {
      fmt::print("{} people\n", pipeline::Catalog(o->catalog).recluster());
      return 0;
    }
    return list_people(*o);
  });
}

}  // namespace tandem::cli
