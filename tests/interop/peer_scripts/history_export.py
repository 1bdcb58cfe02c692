"""Run by Microsoft's SDK in the peer interpreter: its exporter writes instances' histories into a folder.

Usage: history_export.py ADDRESS TASKHUB FOLDER INSTANCE_ID... ; prints one JSON line {instance_id: path}.
"""

import json
import os
import sys

from durabletask import client
from durabletask.extensions.history_export import HistoryExportContext, run_export_instance_history


class FolderWriter:
    """The smallest HistoryWriter: each blob becomes FOLDER/<container>/<blob_name>."""

    def __init__(self, root):  # type: ignore[no-untyped-def]
        self.root = root
        self.paths = {}

    def write(self, *, instance_id, container, blob_name, payload, content_type, content_encoding,  # type: ignore[no-untyped-def]
              metadata=None):
        path = os.path.join(self.root, container, blob_name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(payload)
        self.paths[instance_id] = path


def main() -> None:
    address, taskhub, folder, *ids = sys.argv[1:]
    c = client.TaskHubGrpcClient(host_address=address, metadata=[("taskhub", taskhub)])
    writer = FolderWriter(folder)
    context = HistoryExportContext(client=c, writer=writer)
    for iid in ids:
        result = run_export_instance_history(context, {"instance_id": iid, "destination": {"container": "peer"}})
        if not result["success"]:
            raise SystemExit(f"export of {iid} failed: {result['error']}")
    print(json.dumps(writer.paths))


if __name__ == "__main__":
    main()
