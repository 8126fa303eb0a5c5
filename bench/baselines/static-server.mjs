// Download baseline: express.static (serve-static, with Range and ETag) over the directory holding
// the same bytes the service serves.
import express from 'express';

const app = express();
app.use(express.static(process.argv[2]));
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`LISTENING ${server.address().port}\n`));
