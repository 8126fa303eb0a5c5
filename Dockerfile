# syntax=docker/dockerfile:1
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
# npm install honours the lock file (npm 11's ci refuses locks without other platforms' optional packages).
RUN npm install --no-audit --no-fund
COPY tsconfig.json nest-cli.json ./
COPY src ./src
RUN npx nest build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
# Media tools for thumbnails (videos, PDFs); curl for the container health check.
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg poppler-utils curl && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /app/data && chown -R node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s CMD curl -fsS http://127.0.0.1:3000/health || exit 1
# The server applies pending migrations at start.
# A small young generation keeps memory flat while large files stream through (see README).
CMD ["node", "--max-semi-space-size=1", "--expose-gc", "dist/main.js"]
